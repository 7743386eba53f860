package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

func runTap(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("tap", "[--session S] [--all] [--json]", "warn")
	conn := f.natsFlags(natsURLUsage)
	prefix := f.String("prefix", wire.DefaultPrefix, "subject prefix")
	session := f.String("session", "", "only this session (default: every session)")
	all := f.Bool("all", false, "start from the oldest stored event instead of new ones")
	asJSON := f.Bool("json", false, "print each event as one JSON line")
	if err := f.Parse(args); err != nil {
		return err
	}
	if *session != "" && !wire.ValidToken(*session) {
		return fmt.Errorf("tap: %q is not a valid session id", *session)
	}
	nc, err := conn.connect(conn.URL(), "turnstream tap")
	if err != nil {
		return err
	}
	defer nc.Close()
	c, err := client.New(nc, client.WithPrefix(*prefix))
	if err != nil {
		return err
	}
	// A Tap reads with direct gets and holds no consumer (the follow
	// contract), so an auditor needs no $JS.API.CONSUMER permission.
	tap, err := c.Tap(ctx, client.TapOptions{Session: *session, New: !*all})
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	defer tap.Close()
	fmt.Fprintf(os.Stderr, "tapping %s (Ctrl-C stops)\n", tap.Filter())
	enc := json.NewEncoder(out)
	skipped := 0
	for {
		u, err := tap.Next(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil
			}
			return fmt.Errorf("tap: %w", err)
		}
		if n := tap.Skipped(); n > skipped {
			fmt.Fprintf(os.Stderr, "tap: skipped %d undecodable events\n", n-skipped)
			skipped = n
		}
		ev := u.Event
		if *asJSON {
			if err := enc.Encode(ev); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "%s %-12s %s\n", ev.Time.Format("15:04:05.000"), ev.SessionID, console.EventLine(ev))
	}
}
