package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// tapOptions are the flags of `turnstream tap`.
type tapOptions struct {
	conn    *natsFlags
	prefix  string
	session string
	all     bool
	json    bool
}

func newTapCmd() *cobra.Command {
	var o tapOptions
	cmd := &cobra.Command{
		Use:   "tap [--session S] [--all] [--json]",
		Short: "print session events live",
		Long: `Print the audit events stored in TURN_EVENTS as they are stored, of every
session or of one, holding no consumer. --json prints each event as one JSON
line (a wire.SessionEvent, as schemas/ describes it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTap(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	addLogFlags(f, "warn") // accepted as before; tap logs nothing
	o.conn = addNATSFlags(f, natsURLUsage)
	f.StringVar(&o.prefix, "prefix", wire.DefaultPrefix, "subject prefix")
	f.StringVar(&o.session, "session", "", "only this session (default: every session)")
	f.BoolVar(&o.all, "all", false, "start from the oldest stored event instead of new ones")
	f.BoolVar(&o.json, "json", false, "print each event as one JSON line")
	return cmd
}

func runTap(ctx context.Context, o tapOptions, out io.Writer) error {
	if o.session != "" && !wire.ValidToken(o.session) {
		return fmt.Errorf("tap: %q is not a valid session id", o.session)
	}
	c, closeConn, err := o.conn.client("turnstream tap", client.WithPrefix(o.prefix))
	if err != nil {
		return err
	}
	defer closeConn()
	// A Tap reads with direct gets and holds no consumer (the follow
	// contract), so an auditor needs no $JS.API.CONSUMER permission.
	tap, err := c.Tap(ctx, client.TapOptions{Session: o.session, New: !o.all})
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
		if o.json {
			if err := enc.Encode(ev); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "%s %-12s %s\n", ev.Time.Format("15:04:05.000"), ev.SessionID, console.EventLine(ev))
	}
}
