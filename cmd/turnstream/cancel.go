package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// cancelOptions are the flags of `turnstream cancel`.
type cancelOptions struct {
	conn   *natsFlags
	prefix string
}

func newCancelCmd() *cobra.Command {
	var o cancelOptions
	cmd := &cobra.Command{
		Use:   "cancel SESSION [TURN]",
		Short: "cancel a turn (or, without TURN, the session's running turns)",
		Long: `Cancel a turn: the worker running it stops it, and one that no worker runs
yet ends turn.failed (cancelled) when a worker picks it up, without calling
its provider. It returns once a worker confirmed that it stored the cancel;
it fails when no worker answered (the cancel reached nobody) or the worker
could not store it (cancel again). Without TURN it cancels the session's
running turns only, and nothing is stored. Follow the turn (inspect, tap)
for its terminal event.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn := ""
			if len(args) == 2 {
				turn = args[1]
			}
			return runCancel(cmd.Context(), o, args[0], turn, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.conn = addNATSFlags(f, natsURLUsage)
	f.StringVar(&o.prefix, "prefix", wire.DefaultPrefix, "subject prefix")
	return cmd
}

func runCancel(ctx context.Context, o cancelOptions, session, turn string, out io.Writer) error {
	c, closeConn, err := o.conn.client("turnstream cancel", client.WithPrefix(o.prefix))
	if err != nil {
		return err
	}
	defer closeConn()
	err = c.Cancel(ctx, session, turn)
	switch {
	case errors.Is(err, client.ErrNoWorkers):
		return fmt.Errorf("cancel: no worker answered: the cancel reached nobody (is a worker running on %s?)", o.conn.URL())
	case errors.Is(err, client.ErrCancelNotStored):
		return errors.New("cancel: a worker got the cancel but could not store it; a turn it does not run may still run: cancel again")
	case err != nil:
		return fmt.Errorf("cancel: %w", err)
	case turn == "":
		_, err = fmt.Fprintf(out, "cancel of session %s's running turns sent\n", session)
	default:
		_, err = fmt.Fprintf(out, "cancel of turn %s of session %s stored\n", turn, session)
	}
	return err
}
