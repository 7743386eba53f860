package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// StateStore is the worker-only store of provider facts, keyed per turn
// and step (bus.State). Nothing in it is published on a public subject.
type StateStore interface {
	Put(ctx context.Context, key string, value []byte) error
}

// StateVersion versions the records below.
const StateVersion = 1

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

// StepRecord is what a finalized step leaves for later requests: which
// provider answered and the mapping of each normalized tool-call id to the
// id the provider sent.
type StepRecord struct {
	V          int         `json:"v"`
	Step       int         `json:"step"`
	Provider   string      `json:"provider"`
	Model      string      `json:"model"`
	API        string      `json:"api"`
	ResponseID string      `json:"response_id,omitempty"`
	Calls      []CallIDs   `json:"calls,omitempty"`
	Attempts   int         `json:"attempts"`
	Usage      *wire.Usage `json:"usage,omitempty"`
}

// CallIDs maps a normalized tool-call id to the provider's original.
type CallIDs struct {
	ID         string `json:"id"`
	ProviderID string `json:"provider_id"`
}

// StateKey is the key of a turn's step record; RequestKey of its request facts.
func StateKey(session, turn string, step int) string {
	return session + "." + turn + "." + strconv.Itoa(step)
}

// RequestKey is the key of a step's request facts.
func RequestKey(session, turn string, step int) string {
	return StateKey(session, turn, step) + ".request"
}

func (r *run) put(ctx context.Context, key string, v any) error {
	if r.loop.State == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("turn: encode state: %w", err)
	}
	if err := r.loop.State.Put(ctx, key, b); err != nil {
		return fmt.Errorf("turn: state: %w", err)
	}
	return nil
}

// checkpoint makes a step's request facts durable before its call.
func (r *run) checkpoint(ctx context.Context, step, attemptBase int) error {
	return r.put(ctx, RequestKey(r.req.SessionID, r.req.TurnID, step), RequestFacts{
		V: StateVersion, Step: step, AttemptBase: attemptBase, Route: r.req.Route, Messages: len(r.msgs),
	})
}

// record stores a finalized step's provider facts, before its message.
func (r *run) record(ctx context.Context, step int, res *provider.Result, calls []wire.Call) error {
	rec := StepRecord{
		V: StateVersion, Step: step, Provider: res.Target.Provider, Model: res.Target.Model, API: res.API,
		ResponseID: res.Response.ResponseID, Attempts: len(res.Attempts), Usage: res.Response.Usage,
	}
	for i, c := range calls {
		rec.Calls = append(rec.Calls, CallIDs{ID: c.ID, ProviderID: res.Response.ToolCalls[i].ProviderID})
	}
	return r.put(ctx, StateKey(r.req.SessionID, r.req.TurnID, step), rec)
}
