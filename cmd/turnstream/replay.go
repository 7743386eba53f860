package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/replay"
)

// replayOptions are the flags of `turnstream replay`.
type replayOptions struct {
	log     *logFlags
	conn    *natsFlags
	session string
	turn    string
	config  string
	events  bool
}

func newReplayCmd() *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay --session S --turn T [--nats-url URL] [--config F]",
		Short: "re-run a recorded turn offline from its raw provider frames and report divergence",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplay(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "warn")
	o.conn = addNATSFlags(f, "NATS server holding the recorded turn (default $NATS_URL, else config nats.url, else "+defaultNATSURL+")")
	f.StringVar(&o.session, "session", "", "session id (required)")
	f.StringVar(&o.turn, "turn", "", "turn id (required)")
	f.StringVar(&o.config, "config", "", "the recording workers' config: providers, models, routes, limits, prefix (default: derived from the recording)")
	f.BoolVar(&o.events, "events", false, "also print every audit event of the replayed turn")
	return cmd
}

func runReplay(ctx context.Context, o replayOptions, out io.Writer) error {
	if o.session == "" || o.turn == "" {
		return errors.New("replay: --session and --turn are required")
	}
	log, err := o.log.logger()
	if err != nil {
		return err
	}
	var cfg *config.Config
	if o.config != "" {
		if cfg, err = config.Load(o.config); err != nil {
			return err
		}
	}
	nc, err := o.conn.connect(o.conn.URLWith(cfg), "turnstream replay")
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = replay.Run(ctx, replay.Options{Conn: nc, Config: cfg, Session: o.session, Turn: o.turn, Out: out, Verbose: o.events, Log: log})
	return err
}
