package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/inspect"
	"github.com/turnstream/turnstream/pkg/wire"
)

// inspectOptions are the flags of `turnstream inspect` and its
// subcommands.
type inspectOptions struct {
	conn   *natsFlags
	prefix string
	json   bool
}

func newInspectCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "print a session's turns, or one turn's timeline, read from the streams",
		Long: `Print what the streams hold of a session or of one turn, read with direct gets
(no consumer, nothing written): for a turn its steps, each provider attempt
with the marker that ended it (completed, retrying, failed), its tool calls
with their durations, its messages (roles and sizes, never content), every
event, its usage and its outcome. --json prints the same as one JSON object.`,
		Args: cobra.NoArgs,
	}
	f := cmd.PersistentFlags()
	o.conn = addNATSFlags(f, natsURLUsage)
	f.StringVar(&o.prefix, "prefix", wire.DefaultPrefix, "subject prefix")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	cmd.AddCommand(&cobra.Command{
		Use:   "session SESSION",
		Short: "print a session's turns: outcome, steps, tool calls, usage, duration",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.Context(), o, cmd.OutOrStdout(), func(ctx context.Context, r *inspect.Reader) (any, func(io.Writer) error, error) {
				s, err := r.Session(ctx, args[0])
				return s, func(w io.Writer) error { return inspect.WriteSession(w, s) }, err
			})
		},
	}, &cobra.Command{
		Use:   "turn SESSION TURN",
		Short: "print a turn's timeline: steps, attempts, tool calls, events, usage, outcome",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.Context(), o, cmd.OutOrStdout(), func(ctx context.Context, r *inspect.Reader) (any, func(io.Writer) error, error) {
				t, err := r.Turn(ctx, args[0], args[1])
				return t, func(w io.Writer) error { return inspect.WriteTurn(w, t) }, err
			})
		},
	})
	return cmd
}

// runInspect connects, reads one view with read and prints it.
func runInspect(ctx context.Context, o inspectOptions, out io.Writer,
	read func(context.Context, *inspect.Reader) (view any, write func(io.Writer) error, err error)) error {
	nc, err := o.conn.connect(o.conn.URL(), "turnstream inspect")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	view, write, err := read(ctx, inspect.NewReader(js, o.prefix))
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(view)
	}
	return write(out)
}
