package turn

import (
	"context"
	"fmt"
	"strconv"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// StateStore is the worker-only store of provider state, keyed per turn
// and step (bus.State). Nothing in it is published on a public subject.
type StateStore interface {
	Put(ctx context.Context, key string, value []byte) error
	Get(ctx context.Context, key string) ([]byte, bool, error)
}

// RequestFacts are made durable before a step's provider call
// (LLM-CHECKPOINT-BARRIER): if they cannot be written, the provider is not
// called.
type RequestFacts struct {
	V           int    `json:"v"`
	Step        int    `json:"step"`
	AttemptBase int    `json:"attempt_base"`
	Route       string `json:"route"`
	// Messages is how many session-log messages the request was built from.
	Messages int `json:"messages"`
}

// Worker-only keys that are not a step's use a first token turn ids can
// never have ("=" is not a subject-token character), so they cannot collide
// with a turn's step keys.

// RecordKey is the key of a turn's record.
func RecordKey(session, turn string) string { return session + "." + turn + ".=turn" }

// EnvelopeKey is the key of a session's continuation envelope.
func EnvelopeKey(session string) string { return session + ".=continuation" }

// summaryKey is the key of a session's cached summary of the history before
// message seq.
func summaryKey(session string, seq uint64) string {
	return session + ".=summary." + strconv.FormatUint(seq, 10)
}

// Record is a turn's own durable record. It is written when the turn is
// accepted and again, with End, before its terminal event. Whether a
// delivery is new, a redelivery, a resubmission or of an ended turn is
// decided from it (never from a delivery count a restarted server may
// reset).
type Record struct {
	V int `json:"v"`
	// Seq is the submit-stream sequence of the request that was accepted
	// for the turn id: another request with the same turn id is a
	// resubmission, which never runs.
	Seq uint64 `json:"seq"`
	// End is set once the turn ended.
	End *EndRecord `json:"end,omitempty"`
}

// EndRecord is how a turn ended: its terminal event's type and payload, so
// a redelivery republishes the same event.
type EndRecord struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	// Payload is the terminal event's payload as it was published
	// (wire.SessionEvent.Payload, built by wire.NewEvent), kept to be
	// published again as it is.
	Payload map[string]any `json:"payload"`
}

// RequestKey is the key of a step's request facts.
func RequestKey(session, turn string, step int) string {
	return history.StateKey(session, turn, step) + ".request"
}

func (r *run) put(ctx context.Context, key string, v any) error {
	if r.state == nil {
		return nil
	}
	b, err := wire.JSON.Marshal(v) // not HTML-escaped: "<" in an echo stays one byte
	if err != nil {
		return fmt.Errorf("turn: encode state: %w", err)
	}
	// Like appends, state writes are not cut short by a cancellation.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := r.state.Put(wctx, key, b); err != nil {
		return fmt.Errorf("turn: state: %w", err)
	}
	return nil
}

// putAsync stores v under key without waiting when the store pipelines
// writes (r.sync waits), synchronously otherwise.
func (r *run) putAsync(ctx context.Context, key string, v any) error {
	ps, ok := r.state.(pipelinedState)
	if !ok {
		return r.put(ctx, key, v)
	}
	b, err := wire.JSON.Marshal(v)
	if err != nil {
		return fmt.Errorf("turn: encode state: %w", err)
	}
	ps.PutAsync(ctx, key, b)
	return nil
}

// sync waits for every write of the delivery still in flight (chunks, raw
// frames, events, pipelined appends and state writes) and returns the first
// failure: nothing the turn decides next rests on a write that was lost.
// Like appends, it is not cut short by a cancellation.
func (r *run) sync(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	first := r.w.Flush(wctx)
	if pw, ok := r.w.(pipelinedWriter); ok {
		if err := pw.Sync(wctx); err != nil && first == nil {
			first = err
		}
	}
	if ps, ok := r.state.(pipelinedState); ok {
		if err := ps.Sync(wctx); err != nil && first == nil {
			first = fmt.Errorf("turn: state: %w", err)
		}
	}
	return first
}

// checkpoint makes a step's request facts durable before its call, with
// every write of the delivery before it (the turn's record and input
// messages go out with it, and are awaited together).
func (r *run) checkpoint(ctx context.Context, step, attemptBase int) error {
	if err := r.putAsync(ctx, RequestKey(r.req.SessionID, r.req.TurnID, step), RequestFacts{
		V: history.ReplayVersion, Step: step, AttemptBase: attemptBase, Route: r.req.Route, Messages: len(r.msgs),
	}); err != nil {
		return err
	}
	return r.sync(ctx)
}

// record stores a finalized step's replay state before its message: the
// provider, API and model that answered, the response identity and raw stop
// reason, the provider's original call ids, and, only for a destination that
// requires it, passes the native gates and a turn that stays safe, the
// reasoning echo within its cap. Plain turns' reasoning is never stored.
func (r *run) record(ctx context.Context, step int, res *provider.Result, calls []wire.Call) error {
	resp := res.Response
	st := history.StepState{
		V: history.ReplayVersion, Step: step, API: res.API, Provider: res.Target.Provider, Model: res.Target.Model,
		ResponseID: resp.ResponseID, StopReason: resp.RawFinishReason, Blocks: blocks(resp),
		Attempts: len(res.Attempts), Usage: resp.Usage,
	}
	for i, c := range calls {
		st.Calls = append(st.Calls, history.CallIDs{ID: c.ID, ProviderID: resp.ToolCalls[i].ProviderID})
	}
	r.served = res
	if r.storesEcho(res, calls) {
		st.Echo = &history.Echo{Field: res.Replay.Echo, Value: res.Response.Echo}
	}
	// Awaited with the step's chunks (persist): both before its message.
	return r.putAsync(ctx, history.StateKey(r.req.SessionID, r.req.TurnID, step), st)
}

// storesEcho decides whether a step's echo is kept for replay: where its
// API keeps one (Replay.Echo) and the target takes native tool history.
// Whether a replay then requires it is the ReasoningEcho capability's
// business, decided when a later request is projected.
func (r *run) storesEcho(res *provider.Result, calls []wire.Call) bool {
	caps := res.Model.Capabilities
	if len(calls) == 0 || res.Replay.Echo == "" || !res.Replay.Native || !caps.NativeToolHistory || !caps.Tools {
		return false
	}
	if len(res.Response.Echo) > r.loop.echoCap() {
		return false // oversized: the turn replays flat
	}
	for _, m := range r.msgs[history.StateOf(r.msgs, r.req.TurnID).Start:] {
		for _, c := range m.ToolCalls {
			if c.ArgumentsRedacted {
				return false // the turn is not replay safe: no echo for it
			}
		}
	}
	for _, c := range calls {
		if c.ArgumentsRedacted {
			return false
		}
	}
	return true
}

// blocks counts a response's content blocks.
func blocks(resp *assemble.Response) int {
	n := len(resp.ToolCalls)
	if resp.Text != "" {
		n++
	}
	if resp.Reasoning != "" {
		n++
	}
	return n
}
