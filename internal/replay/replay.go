package replay

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Options configure a replay.
type Options struct {
	// Conn is connected to the NATS server the turn ran on. Required. The
	// replay only reads there.
	Conn *nats.Conn
	// Config is the recording workers' configuration (its providers,
	// models, capabilities, routes, limits and subject prefix). Default
	// nil: one derived from the recording, with the default prefix.
	Config *config.Config
	// Session and Turn name the turn. Required.
	Session, Turn string
	// Out receives the replayed turn as `turnstream demo` prints it, then
	// the verdict. Default: discarded.
	Out io.Writer
	// Verbose also prints every audit event of the replayed turn.
	Verbose bool
	// Log receives the replay stack's logs. Default: disabled.
	Log zerolog.Logger
}

// Report is what a replay found.
type Report struct {
	// Calls is the number of provider calls derived from the recording.
	Calls int
	// Messages and Events count the recorded turn's.
	Messages, Events int
	// Divergences are the differences of the replayed turn; none when it
	// matches the recording.
	Divergences []Divergence
}

// Run replays one recorded turn (see the package doc), prints it and its
// verdict to o.Out, and returns what it found. A replay that diverges
// returns its report and an error wrapping ErrDiverged; one that cannot
// run returns the reason (ErrMissingStream, ErrUnknownSession,
// ErrUnknownTurn, ErrNotEnded, ErrNoFrames, ErrUnsupportedAPI, or the
// scripted package's derivation errors).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Conn == nil {
		return nil, errors.New("replay: a NATS connection is required")
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	subjects := wire.Subjects{}
	if o.Config != nil {
		subjects.Prefix = o.Config.NATS.Prefix
	}
	js, err := jetstream.New(o.Conn)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	rec, err := Read(ctx, js, subjects, o.Session, o.Turn)
	if err != nil {
		return nil, err
	}
	script, err := scripted.Derive(rec.Frames, rec.Chunks)
	if err != nil {
		return nil, fmt.Errorf("replay: derive the provider calls: %w", err)
	}
	cfg, err := rec.workerConfig(o.Config, script)
	if err != nil {
		return nil, err
	}
	adapter, err := scripted.New(script, scripted.WithTranslator(rec.translator(cfg)))
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	req := rec.Request()
	st, err := stack.Start(ctx, stack.Options{
		Config:     cfg,
		NewAdapter: func(config.Provider) (provider.Adapter, error) { return adapter, nil },
		Clock:      instantClock{},
		Tools:      rec.tools(req),
		Log:        o.Log,
	})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	replayJS, err := jetstream.New(st.Conn)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if err := rec.seed(ctx, replayJS, subjects); err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "turnstream replay: session %s turn %s, %d provider calls derived from %s, re-run on an embedded NATS server\n",
		rec.Session, rec.Turn, len(script.Calls), wire.StreamRaw)
	for _, in := range req.Input {
		fmt.Fprintf(out, "> %s\n", in.Content)
	}
	fmt.Fprintln(out)
	c, err := client.New(st.Conn, client.WithPrefix(cfg.NATS.Prefix))
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	t, err := c.Submit(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("replay: submit the turn: %w", err)
	}
	defer t.Close()
	p := console.NewTurnPrinter(out)
	p.Verbose = o.Verbose
	if _, err := console.Follow(ctx, t, p); err != nil {
		return nil, fmt.Errorf("replay: follow the replayed turn: %w", err)
	}
	replayed := &Recording{Session: rec.Session, Turn: rec.Turn}
	if err := replayed.readTurn(ctx, directget.New(replayJS), subjects); err != nil {
		return nil, fmt.Errorf("replay: read the replayed turn: %w", err)
	}

	rep := &Report{Calls: len(script.Calls), Messages: len(rec.Messages), Events: len(rec.Events),
		Divergences: Compare(rec.Messages, replayed.Messages, rec.Events, replayed.Events)}
	if left := adapter.Remaining(); left > 0 {
		rep.Divergences = append(rep.Divergences, Divergence{Where: "provider calls", Field: "made",
			Recorded: fmt.Sprint(rep.Calls), Replayed: fmt.Sprint(rep.Calls - left)})
	}
	fmt.Fprintln(out)
	if len(rep.Divergences) == 0 {
		fmt.Fprintf(out, "replay matches the recorded turn (%d messages, %d events)\n", rep.Messages, rep.Events)
		return rep, nil
	}
	n := differences(len(rep.Divergences))
	fmt.Fprintf(out, "replay diverges from the recorded turn (%s):\n", n)
	for _, d := range rep.Divergences {
		fmt.Fprintf(out, "  - %s\n", d)
	}
	return rep, fmt.Errorf("%w (%s)", ErrDiverged, n)
}

func differences(n int) string {
	if n == 1 {
		return "1 difference"
	}
	return fmt.Sprintf("%d differences", n)
}

// translator reads each recorded call's frames as its provider's API
// does; workerConfig has refused APIs whose frames cannot be read back.
func (r *Recording) translator(cfg *config.Config) func(provider.Target) scripted.Translator {
	return func(t provider.Target) scripted.Translator {
		p, _ := cfg.Provider(t.Provider)
		if api, ok := apis.Lookup(string(p.API)); ok && api.Frames != nil {
			return api.Frames()
		}
		return openaichat.NewFrameTranslator()
	}
}
