package console

import (
	"context"
	"errors"
	"io"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Follow prints t's updates with p, as they arrive, until the turn's
// terminal event, and returns that event. It fails only when reading the
// turn fails; how the turn ended is the caller's to judge.
func Follow(ctx context.Context, t *client.Turn, p *TurnPrinter) (*wire.SessionEvent, error) {
	return follow(ctx, t, func(u client.Update) error {
		p.Print(u)
		return nil
	})
}

// follow passes t's updates to show until the turn's terminal event, and
// returns that event.
func follow(ctx context.Context, t *client.Turn, show func(client.Update) error) (*wire.SessionEvent, error) {
	var terminal *wire.SessionEvent
	for {
		u, err := t.Next(ctx)
		if errors.Is(err, io.EOF) {
			if terminal == nil {
				return nil, errors.New("console: the turn ended without a terminal event")
			}
			return terminal, nil
		}
		if err != nil {
			return nil, err
		}
		if err := show(u); err != nil {
			return nil, err
		}
		if u.Event != nil && u.Event.Terminal() {
			terminal = u.Event
		}
	}
}
