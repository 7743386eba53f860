package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// stateStream is the stream behind the worker-only state bucket.
const stateStream = "KV_" + bus.StateBucket

// kvOperation is the header of a KV delete or purge marker.
const kvOperation = "KV-Operation"

// readTimeout bounds each batch read.
const readTimeout = 10 * time.Second

// Recording is what the streams hold of one turn and of the session before
// it: everything a replay needs, read once.
type Recording struct {
	Session, Turn string
	// Before is the session log before the turn's first message: the
	// replay's session starts from it.
	Before []wire.Message
	// Messages are the turn's messages in log order, and Events its audit
	// events in stream order.
	Messages []wire.Message
	Events   []wire.SessionEvent
	// Frames and Chunks are the turn's raw frames (TURN_RAW) and chunks
	// (TURN_CHUNKS), the input of scripted.Derive.
	Frames []wire.RawFrame
	Chunks []wire.Chunk
	// State is the worker-only state the session's earlier turns left
	// (their records, request facts and step states) and its cached
	// summaries, by key: the replay's state starts from it. The turn's own
	// state, later turns' and the session's lease and continuation
	// envelope are not in it.
	State map[string][]byte
	// Route is the route the turn's first step asked for ("" for the
	// default route).
	Route string
	// APIs maps each provider that answered a step of the turn to the wire
	// API it answered through.
	APIs map[string]string
}

// Read reads the recording of one turn from the server js is connected to.
// It only reads: direct gets, and the ephemeral ordered consumers
// scripted.Load reads TURN_RAW and TURN_CHUNKS with. subjects must be the
// recording workers' (their config's nats.prefix).
func Read(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects, session, turnID string) (*Recording, error) {
	if !wire.ValidToken(session) || !wire.ValidToken(turnID) {
		return nil, errors.New("replay: session and turn must be subject tokens ([A-Za-z0-9_-], at most 128)")
	}
	streams := map[string]jetstream.Stream{}
	for _, name := range []string{wire.StreamMessages, wire.StreamEvents, wire.StreamRaw, wire.StreamChunks, stateStream} {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w: %s (is this the NATS server the turn ran on?)", ErrMissingStream, name)
		}
		if err != nil {
			return nil, fmt.Errorf("replay: stream %s: %w", name, err)
		}
		streams[name] = s
	}
	r := &Recording{Session: session, Turn: turnID, APIs: map[string]string{}}
	dg := directget.New(js)
	if err := r.readTurn(ctx, dg, subjects); err != nil {
		if errors.Is(err, ErrNotEnded) {
			err = fmt.Errorf("%w (or its events expired: %s keeps them %s)", err, wire.StreamEvents, keptFor(streams[wire.StreamEvents]))
		}
		return nil, err
	}
	var err error
	r.Frames, r.Chunks, err = scripted.Load(ctx, js, subjects, session, turnID)
	if err != nil && !errors.Is(err, scripted.ErrNoChunks) {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if len(r.Frames) == 0 {
		return nil, fmt.Errorf("%w: turn %s of session %s has none left (%s keeps them %s)",
			ErrNoFrames, turnID, session, wire.StreamRaw, keptFor(streams[wire.StreamRaw]))
	}
	if err := r.readState(ctx, dg); err != nil {
		return nil, err
	}
	return r, nil
}

// readTurn reads the session log (Before and the turn's Messages) and the
// turn's events, which must end with its terminal event.
func (r *Recording) readTurn(ctx context.Context, dg *directget.Getter, subjects wire.Subjects) error {
	log, err := decodeAll[wire.Message](ctx, dg, wire.StreamMessages, subjects.Message(r.Session))
	if err != nil {
		return err
	}
	if len(log) == 0 {
		return fmt.Errorf("%w: the session log of %s is empty", ErrUnknownSession, r.Session)
	}
	if err := r.split(log); err != nil {
		return err
	}
	events, err := decodeAll[wire.SessionEvent](ctx, dg, wire.StreamEvents, subjects.Event(r.Session))
	if err != nil {
		return err
	}
	for _, ev := range events {
		if ev.TurnID == r.Turn {
			r.Events = append(r.Events, ev)
		}
	}
	if n := len(r.Events); n == 0 || !r.Events[n-1].Terminal() {
		return fmt.Errorf("%w: turn %s of session %s has no terminal event: it is still running", ErrNotEnded, r.Turn, r.Session)
	}
	return nil
}

// split finds the turn's messages in the session log (they are contiguous:
// a session's turns never overlap) and keeps the log before them.
func (r *Recording) split(log []wire.Message) error {
	start := -1
	for i, m := range log {
		if m.TurnID == r.Turn {
			start = i
			break
		}
	}
	if start < 0 {
		return fmt.Errorf("%w: session %s has no message of turn %s", ErrUnknownTurn, r.Session, r.Turn)
	}
	end := start
	for end < len(log) && log[end].TurnID == r.Turn {
		end++
	}
	r.Before, r.Messages = log[:start], log[start:end]
	return nil
}

// readState reads the session's worker-only state: the turn's request
// facts and step states, and what of the earlier turns' a replay seeds.
func (r *Recording) readState(ctx context.Context, dg *directget.Getter) error {
	prefix := "$KV." + bus.StateBucket + "."
	state := map[string][]byte{}
	err := readAll(ctx, dg, stateStream, prefix+r.Session+".>", func(m *jetstream.RawStreamMsg) error {
		key := strings.TrimPrefix(m.Subject, prefix)
		if op := m.Header.Get(kvOperation); op == "DEL" || op == "PURGE" {
			delete(state, key)
		} else {
			state[key] = m.Data
		}
		return nil
	})
	if err != nil {
		return err
	}
	if b, ok := state[turn.RequestKey(r.Session, r.Turn, 1)]; ok {
		var f turn.RequestFacts
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("replay: request facts of step 1: %w", err)
		}
		r.Route = f.Route
	}
	for step := 1; ; step++ {
		b, ok := state[history.StateKey(r.Session, r.Turn, step)]
		if !ok {
			break
		}
		var st history.StepState
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("replay: state of step %d: %w", step, err)
		}
		r.APIs[st.Provider] = st.API
	}
	earlier := map[string]bool{}
	for _, m := range r.Before {
		earlier[m.TurnID] = true
	}
	r.State = map[string][]byte{}
	for key, v := range state {
		rest := strings.TrimPrefix(key, r.Session+".")
		owner, _, _ := strings.Cut(rest, ".")
		if earlier[owner] || strings.HasPrefix(rest, "=summary.") {
			r.State[key] = v
		}
	}
	return nil
}

// decodeAll reads and decodes every record of stream on subject.
func decodeAll[T any](ctx context.Context, dg *directget.Getter, stream, subject string) ([]T, error) {
	var out []T
	err := readAll(ctx, dg, stream, subject, func(m *jetstream.RawStreamMsg) error {
		var v T
		if err := wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &v); err != nil {
			return fmt.Errorf("record %d does not decode: %w", m.Sequence, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// readAll passes each record of stream on filter to each, in stream order,
// up to the last one stored, with batch direct gets.
func readAll(ctx context.Context, dg *directget.Getter, stream, filter string, each func(*jetstream.RawStreamMsg) error) error {
	var after uint64
	for {
		var failed error
		rctx, cancel := context.WithTimeout(ctx, readTimeout)
		caughtUp, err := dg.Batch(rctx, stream, filter, after, func(m *jetstream.RawStreamMsg) bool {
			if m.Sequence <= after || failed != nil {
				return false
			}
			after, failed = m.Sequence, each(m)
			return true
		})
		cancel()
		switch {
		case failed != nil:
			return fmt.Errorf("replay: %s: %w", stream, failed)
		case err != nil:
			return fmt.Errorf("replay: read %s: %w", stream, err)
		case caughtUp:
			return nil
		}
	}
}

// keptFor renders how long a stream keeps its records, for an error.
func keptFor(s jetstream.Stream) string {
	if d := s.CachedInfo().Config.MaxAge; d > 0 {
		return "for " + d.String()
	}
	return "without a max age"
}
