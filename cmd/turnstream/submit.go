package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// submitOptions are the flags of `turnstream submit`.
type submitOptions struct {
	log       *logFlags
	conn      *natsFlags
	prefix    string
	session   string
	turn      string
	route     string
	system    string
	demoTools bool
	tools     string
	msgpack   bool
	events    bool
	json      bool
	ndjson    bool
}

func newSubmitCmd() *cobra.Command {
	var o submitOptions
	cmd := &cobra.Command{
		Use:   "submit --session S [flags] prompt...",
		Short: "submit a turn and stream its answer",
		Long: `Submit a turn and stream its answer. Flags may come after the prompt; a
prompt that starts with "-" goes after "--".

--json prints, once the turn ended, one JSON object: session_id, turn_id,
outcome (the terminal event's type), reason and field (when it has them),
text (the answer), usage (summed over the assistant messages), messages
and terminal (the terminal event). --ndjson prints every update as it
arrives instead, one JSON object per line with exactly one of chunk,
message or event, and stream_seq. Either way the exit status is 1 when the
turn did not complete.`,
		Example: `  turnstream submit --session s1 --demo-tools "What time is it?"
  turnstream submit --session s1 "What is 17 * 23?" --nats-url nats://127.0.0.1:4222 --json
  turnstream submit --session s1 -- "-1 squared?"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSubmit(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "warn")
	o.conn = addNATSFlags(f, natsURLUsage)
	f.StringVar(&o.prefix, "prefix", wire.DefaultPrefix, "subject prefix")
	f.StringVar(&o.session, "session", "", "session id (required)")
	f.StringVar(&o.turn, "turn", "", "turn id (default: generated)")
	f.StringVar(&o.route, "route", "", "route name (default: the worker's default route)")
	f.StringVar(&o.system, "system", "", "system prompt")
	f.BoolVar(&o.demoTools, "demo-tools", false, "offer the demo tools get_time and calculate")
	f.StringVar(&o.tools, "tools", "", "JSON file with an array of tools to offer ({name, description, parameters})")
	f.BoolVar(&o.msgpack, "msgpack", false, "encode the request in msgpack instead of JSON")
	f.BoolVar(&o.events, "events", false, "also print every audit event of the turn")
	f.BoolVar(&o.json, "json", false, "print the turn's result as one JSON object once it ended")
	f.BoolVar(&o.ndjson, "ndjson", false, "print every chunk, message and event as one JSON line as it arrives")
	cmd.MarkFlagsMutuallyExclusive("json", "ndjson")
	return cmd
}

func runSubmit(ctx context.Context, o submitOptions, args []string, out io.Writer) error {
	prompt := strings.TrimSpace(strings.Join(args, " "))
	if o.session == "" || prompt == "" {
		return errors.New("submit: --session and a prompt are required (see `turnstream submit --help`)")
	}
	req := wire.TurnRequest{
		SessionID: o.session, TurnID: o.turn, Route: o.route, System: o.system,
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}},
	}
	if o.demoTools {
		req.Tools = demotools.Tools()
	}
	if o.tools != "" {
		b, err := os.ReadFile(o.tools)
		if err != nil {
			return fmt.Errorf("submit: --tools: %w", err)
		}
		var tools []wire.Tool
		if err := json.Unmarshal(b, &tools); err != nil {
			return fmt.Errorf("submit: --tools %s: %w", o.tools, err)
		}
		req.Tools = append(req.Tools, tools...)
	}
	opts := []client.Option{client.WithPrefix(o.prefix)}
	if o.msgpack {
		opts = append(opts, client.WithCodec(wire.Msgpack))
	}
	c, closeConn, err := o.conn.client("turnstream submit", opts...)
	if err != nil {
		return err
	}
	defer closeConn()
	t, err := c.Submit(ctx, req)
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintf(os.Stderr, "turn %s of session %s submitted\n", t.ID(), t.Session())
	switch {
	case o.json:
		r, err := t.Wait(ctx)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(console.NewTurnResult(t.Session(), t.ID(), r)); err != nil {
			return err
		}
		return completed(&r.Terminal)
	case o.ndjson:
		terminal, err := console.FollowNDJSON(ctx, t, out)
		if err != nil {
			return err
		}
		return completed(terminal)
	}
	p := console.NewTurnPrinter(out)
	p.Verbose = o.events
	return follow(ctx, t, p)
}
