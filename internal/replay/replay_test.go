package replay_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/internal/replay"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestReplayMatchesRecordedToolTurn records a tool turn (the model calls a
// tool, the tool worker answers, the model answers) after a plain turn of
// the same session, then replays it offline: the replay prints the turn as
// demo does and matches the recording, with or without the recording
// workers' config, and it neither writes to the live server nor calls the
// provider nor runs the tool again.
func TestReplayMatchesRecordedToolTurn(t *testing.T) {
	l := startLive(t)
	l.turn("s1", "t0", "hello there")
	l.turn("s1", "t1", "what is the weather in Paris?", lookupTool)
	l.stop()
	before, requests, runs := l.streamStates(), len(l.mock.Requests()), l.toolRuns.Load()
	if requests != 3 || runs != 1 {
		t.Fatalf("recorded: %d provider requests, %d tool runs; want 3 and 1", requests, runs)
	}

	for _, cfg := range []*config.Config{nil, l.cfg} {
		out, rep, err := l.replayTurn(cfg, "s1", "t1")
		if err != nil {
			t.Fatalf("Run(config %v) = %v; want nil\n%s", cfg != nil, err, out)
		}
		if len(rep.Divergences) != 0 || rep.Calls != 2 || rep.Messages != 4 || rep.Events == 0 {
			t.Errorf("Run(config %v) report = %+v; want 2 calls, 4 messages, events and no divergence", cfg != nil, rep)
		}
		for _, want := range []string{
			"turnstream replay: session s1 turn t1, 2 provider calls derived from TURN_RAW",
			"> what is the weather in Paris?",
			`→ lookup {"city":"Paris"}`,
			`← lookup: sunny, 21°C; asked {"city":"Paris"}`,
			"Here is what I found:",
			"✓ turn.completed: 2 steps, 1 tool calls",
			"replay matches the recorded turn (4 messages, ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("Run(config %v) output lacks %q:\n%s", cfg != nil, want, out)
			}
		}
	}
	if after := l.streamStates(); !maps.Equal(before, after) {
		t.Errorf("live streams after the replay = %v; want them untouched: %v", after, before)
	}
	if n, r := len(l.mock.Requests()), l.toolRuns.Load(); n != requests || r != runs {
		t.Errorf("after the replay: %d provider requests, %d tool runs; want %d and %d", n, r, requests, runs)
	}
}

// TestReplayReportsDivergence tampers with the recorded session log (the
// final answer) and checks that the replay, which re-derives the answer
// from the raw frames, reports the difference and fails.
func TestReplayReportsDivergence(t *testing.T) {
	l := startLive(t)
	l.turn("s1", "t1", "what is the weather in Paris?", lookupTool)
	l.stop()
	tamperLastMessage(t, l, "s1", func(m *wire.Message) { m.Content += " (tampered)" })

	out, rep, err := l.replayTurn(nil, "s1", "t1")
	if !errors.Is(err, replay.ErrDiverged) {
		t.Fatalf("Run() = %v; want ErrDiverged\n%s", err, out)
	}
	if rep == nil || len(rep.Divergences) != 1 {
		t.Fatalf("Run() report = %+v; want one divergence", rep)
	}
	d := rep.Divergences[0]
	if d.Where != "message 4 (assistant, step 2)" || d.Field != "content" || !strings.HasSuffix(d.Recorded, ` (tampered)"`) || strings.Contains(d.Replayed, "tampered") {
		t.Errorf("divergence = %+v; want the final answer's content, tampered in the recording only", d)
	}
	for _, want := range []string{"✓ turn.completed", "replay diverges from the recorded turn (1 difference):", "  - message 4 (assistant, step 2): content: recorded "} {
		if !strings.Contains(out, want) {
			t.Errorf("replay output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "replay matches") {
		t.Errorf("replay output claims a match:\n%s", out)
	}
}

// TestReplayErrors checks the clear errors of a turn that cannot be
// replayed.
func TestReplayErrors(t *testing.T) {
	l := startLive(t)
	l.turn("s1", "t0", "hello there")
	l.turn("s1", "t2", "once more")
	l.turn("s1", "t1", "and again")
	l.stop()
	ctx := ctxFor(t)
	// t0's raw frames expired; t1's terminal event is gone (as if running);
	// t2 is whole.
	raw, err := l.js.Stream(ctx, wire.StreamRaw)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Purge(ctx, jetstream.WithPurgeSubject(wire.Subjects{}.Raw("s1", "t0"))); err != nil {
		t.Fatal(err)
	}
	deleteLastEvent(t, l, "s1")

	empty := startEmpty(t)
	// An API whose recorded frames nothing reads back (the replay
	// adapter's own).
	unreadable := *l.cfg
	unreadable.Providers = []config.Provider{{Name: "mock", API: config.API(scripted.API.Name), BaseURL: "http://127.0.0.1:1"}}
	noRoute := *l.cfg
	noRoute.Routes = []config.Route{{Name: "other", Targets: noRoute.Routes[0].Targets}}
	tests := []struct {
		name          string
		conn          *nats.Conn
		cfg           *config.Config
		session, turn string
		want          error
		says          string
	}{
		{"streams missing", empty, nil, "s1", "t0", replay.ErrMissingStream, "TURN_MESSAGES"},
		{"unknown session", l.nc, nil, "nope", "t0", replay.ErrUnknownSession, "nope"},
		{"unknown turn", l.nc, nil, "s1", "nope", replay.ErrUnknownTurn, "nope"},
		{"raw frames expired", l.nc, nil, "s1", "t0", replay.ErrNoFrames, "TURN_RAW keeps them for 1h0m0s"},
		{"turn not ended", l.nc, nil, "s1", "t1", replay.ErrNotEnded, "TURN_EVENTS keeps them"},
		{"invalid turn id", l.nc, nil, "s1", "a.b", nil, "subject tokens"},
		{"api not replayable", l.nc, &unreadable, "s1", "t2", replay.ErrUnsupportedAPI, "scripted"},
		{"route not in config", l.nc, &noRoute, "s1", "t2", nil, `no route "default"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			_, err := replay.Run(ctxFor(t), replay.Options{Conn: tt.conn, Config: tt.cfg, Session: tt.session, Turn: tt.turn, Out: &out})
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Run(%s, %s) = %v; want %v saying %q", tt.session, tt.turn, err, tt.want, tt.says)
			}
			if out.Len() != 0 {
				t.Errorf("Run(%s, %s) printed %q; want nothing before the replay runs", tt.session, tt.turn, out.String())
			}
		})
	}
}
