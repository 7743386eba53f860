package main

import (
	"context"
	"errors"
	"io"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/replay"
)

func runReplay(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("replay", "--session S --turn T [--nats-url URL] [--config F]", "warn")
	conn := f.natsFlags("NATS server holding the recorded turn (default $NATS_URL, else config nats.url, else " + defaultNATSURL + ")")
	session := f.String("session", "", "session id (required)")
	turnID := f.String("turn", "", "turn id (required)")
	cfgPath := f.String("config", "", "the recording workers' config: providers, models, routes, limits, prefix (default: derived from the recording)")
	events := f.Bool("events", false, "also print every audit event of the replayed turn")
	if err := f.Parse(args); err != nil {
		return err
	}
	if *session == "" || *turnID == "" {
		f.Usage()
		return errors.New("replay: --session and --turn are required")
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	var cfg *config.Config
	if *cfgPath != "" {
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
	}
	nc, err := conn.connect(conn.URLWith(cfg), "turnstream replay")
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = replay.Run(ctx, replay.Options{Conn: nc, Config: cfg, Session: *session, Turn: *turnID, Out: out, Verbose: *events, Log: log})
	return err
}
