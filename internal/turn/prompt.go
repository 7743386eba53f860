package turn

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// summarizerSystem frames a summarization request.
const summarizerSystem = "You compress conversations so they can continue in less space. Never invent facts."

// prompt assembles a step's request: the current turn whole, the newest
// prior history that fits the route's context window (with the answer's
// reserve kept free), a summary of what was left out, the replay state of
// the selected tool groups, and the projector that renders all of it for
// each target of the chain. instruction is sent last, never persisted.
func (r *run) prompt(ctx context.Context, instruction string) (*provider.Request, *history.Projection, error) {
	reserve := r.loop.History.Reserve
	if reserve <= 0 || reserve >= 1 {
		reserve = history.DefaultReserve
	}
	window := int(float64(r.loop.Routes.ContextTokens(r.req.Route)) * (1 - reserve))
	fixed := history.Estimate(r.req.System) + history.Estimate(instruction) + r.toolTokens()
	sel := history.Select(r.msgs, r.req.TurnID, 0)
	sel = history.Select(r.msgs, r.req.TurnID, max(window-fixed-sel.CurrentTokens(), 0))
	states, err := history.Load(ctx, r.state, r.req.SessionID, &sel)
	if err != nil {
		return nil, nil, err
	}
	opts := history.Options{Instruction: instruction, EchoCap: r.loop.echoCap(), Continuation: history.Continuation{
		Envelope: r.envelope, SystemPromptHash: r.systemHash, ToolsetHash: r.toolset, Disabled: r.cursorLost,
	}}
	if len(sel.Dropped) > 0 {
		opts.Summary = r.summarize(ctx, sel.Dropped)
	}
	proj := history.NewProjection(&sel, states, opts)
	return &provider.Request{System: r.req.System, Tools: r.req.Tools, Projector: proj}, proj, nil
}

func (r *run) toolTokens() int {
	if len(r.req.Tools) == 0 {
		return 0
	}
	b, _ := json.Marshal(r.req.Tools) // validated at decode: cannot fail
	return history.Estimate(string(b))
}

// summarize compresses the units left out through the summarization route,
// once per cut (cached in worker-only state); without a route, or when it
// fails, a deterministic notice keeps the request valid and says what was
// dropped. Its input is sanitized: history.CompressionInput.
func (r *run) summarize(ctx context.Context, dropped []history.Unit) string {
	last := dropped[len(dropped)-1].Msgs
	key := summaryKey(r.req.SessionID, last[len(last)-1].Seq)
	if r.state != nil {
		if b, ok, err := r.state.Get(ctx, key); err == nil && ok {
			return string(b)
		}
	}
	fallback := history.FallbackSummary(dropped)
	if r.loop.History.SummaryRoute == "" {
		return fallback
	}
	chain, err := r.loop.Routes.Chain(r.loop.History.SummaryRoute)
	if err != nil {
		return fallback
	}
	res, err := r.loop.Exec.Execute(ctx, chain, &provider.Request{System: summarizerSystem, Messages: history.CompressionInput(dropped)}, quiet{})
	if err != nil || res.Response.Text == "" {
		r.log.Warn().Err(err).Msg("summarization failed; using the omission notice")
		return fallback
	}
	summary := history.SummaryPrefix + res.Response.Text
	if r.state != nil {
		if err := r.state.Put(ctx, key, []byte(summary)); err != nil {
			r.log.Warn().Err(err).Msg("summary not cached")
		}
	}
	return summary
}

// quiet observes a summarization call: its frames are not the turn's.
type quiet struct{}

func (quiet) Frame(int, provider.Target, provider.Frame) error { return nil }
func (quiet) Event(provider.Event)                             {}

// diagnose emits the structured-tool-history events of the projection the
// serving target got: counts and coarse reasons only.
func (r *run) diagnose(step int, proj *history.Projection, t provider.Target) {
	d, ok := proj.Diagnostics(t)
	if !ok {
		return
	}
	r.emit(step, 0, wire.HistorySelected{
		Provider: token(t.Provider), Model: token(t.Model), Native: d.Native, Cursor: d.Cursor,
		SelectedUnits: d.Selected, DroppedUnits: d.Dropped, Summary: d.Summary,
	})
	if d.Placeholders > 0 {
		r.emit(step, 0, wire.HistoryRepaired{PlaceholderCalls: d.Placeholders})
	}
	if d.Gate != "" {
		r.emit(step, 0, wire.HistorySkipped{Reason: wire.HistorySkipReason(d.Gate), FlatGroups: d.FlatGroups})
	}
	for _, reason := range slices.Sorted(maps.Keys(d.Unsafe)) {
		r.emit(step, 0, wire.HistorySkipped{Reason: wire.HistorySkipReason(reason), Turns: d.Unsafe[reason]})
	}
	if d.Degraded != "" {
		r.emit(step, 0, wire.ContinuationDegraded{Reason: wire.DegradedReason(d.Degraded), Provider: token(t.Provider), Model: token(t.Model)})
	}
	if d.Native && d.NativePairs > 0 {
		r.emit(step, 0, wire.HistorySerialized{
			NativePairs: d.NativePairs, FlatGroups: d.FlatGroups, Echoes: d.Echoes, Messages: d.Messages,
		})
	}
}

// loadEnvelope reads the session's envelope; a missing or invalid one is
// no state (start_replay).
func (r *run) loadEnvelope(ctx context.Context) *continuation.Envelope {
	if r.state == nil {
		return nil
	}
	b, ok, err := r.state.Get(ctx, EnvelopeKey(r.req.SessionID))
	if err != nil || !ok {
		return nil
	}
	e, err := continuation.Parse(b)
	if err != nil {
		r.log.Warn().Err(err).Msg("ignoring an unreadable continuation envelope")
		return nil
	}
	return e
}

// saveEnvelope records, at turn completion, where the next turn may
// continue from; an envelope not worth keeping clears the old one, so a
// stale cursor of another provider is never reused.
func (r *run) saveEnvelope(ctx context.Context) {
	if r.state == nil || r.served == nil {
		return
	}
	res := r.served
	c := continuation.Completion{
		Provider: res.Target.Provider, API: res.API, Model: res.Target.Model,
		SystemPromptHash: r.systemHash, ToolsetHash: r.toolset, Cursor: res.Response.ResponseID,
		ContextLimit: res.Model.ContextTokens,
	}
	if u := res.Response.Usage; u != nil {
		in := u.InputTokens + u.CachedInputTokens
		c.InputTokens = &in
	}
	e := continuation.NewEnvelope(c, r.loop.now())
	if !continuation.DecidePersistence(e) {
		e = nil
	}
	b, err := continuation.Serialize(e)
	if err != nil {
		r.log.Warn().Err(err).Msg("continuation envelope not saved")
		return
	}
	if ps, ok := r.state.(pipelinedState); ok {
		ps.PutAsync(ctx, EnvelopeKey(r.req.SessionID), b) // awaited with the turn's end
		return
	}
	if err := r.state.Put(ctx, EnvelopeKey(r.req.SessionID), b); err != nil {
		r.log.Warn().Err(err).Msg("continuation envelope not saved")
	}
}
