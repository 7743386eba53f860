package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/turnstream/turnstream/internal/assemble"
)

// PreparedCall is a frozen handle on one target of one step
// (LLM-PREPARED-CALL): it captures the registration's adapter, metadata and
// retry policy, the model and its context, and the serialized body, at the
// moment of preparation. A registry Replace or a config change afterwards
// does not reach it (LLM-PREPARED-PIN-TEST, LLM-PI-STREAM). It dispatches
// once; a second dispatch, or a body changed behind its back, is
// INVALID_PREPARED_CALL.
type PreparedCall struct {
	target     Target
	regID      string
	api        string
	replay     Replay
	model      Model
	adapter    Adapter
	retry      RetryPolicy
	body       []byte
	sum        [sha256.Size]byte
	dispatched atomic.Bool
}

// Prepare resolves target through the registry and serializes req for it.
// A target that cannot serve req fails with a *Failure whose Reason is one
// of the Skip constants: unknown provider or model, deprecated provider,
// missing capability, or a body that cannot be built.
func (r *Registry) Prepare(target Target, req *Request) (*PreparedCall, error) {
	reg, ok := r.Lookup(target.Provider)
	if !ok {
		return nil, Fail(ClassNoRoute, SkipUnknown, ErrUnknownProvider)
	}
	if reg.Metadata.Deprecated {
		return nil, Fail(ClassDeprecated, SkipDeprecated, fmt.Errorf("%w: %q", ErrDeprecatedRefusal, target.Provider))
	}
	i := slices.IndexFunc(reg.Metadata.Models, func(m Model) bool { return m.Name == target.Model })
	if i < 0 {
		return nil, Fail(ClassUnsupported, SkipUnknownModel, nil)
	}
	model := reg.Metadata.Models[i]
	if reason := model.Capabilities.check(req); reason != "" {
		return nil, Fail(ClassUnsupported, reason, nil)
	}
	if req.Projector != nil {
		dest := Destination{Target: target, API: reg.Metadata.API, Replay: reg.Metadata.Replay, Model: model, CallIDFormat: reg.Metadata.CallIDFormat,
			DurableCursor: reg.Metadata.DurableCursor && model.Capabilities.StatefulContinuation}
		p, err := req.Projector.Project(dest)
		if err != nil {
			return nil, Fail(ClassInvalidRequest, SkipPrepareFailed, err)
		}
		projected := *req
		projected.Messages, projected.PreviousResponseID, projected.Projector = p.Messages, p.PreviousResponseID, nil
		req = &projected
	}
	body, err := reg.Adapter.Prepare(RemapCallIDs(req, reg.Metadata.CallIDFormat), model)
	if err != nil {
		// The request could not be built: never a transport problem, and the
		// reason stays a Skip constant whatever the adapter said.
		class := AsFailure(err).Class
		if class == ClassTransport {
			class = ClassInvalidRequest
		}
		return nil, Fail(class, SkipPrepareFailed, err)
	}
	return &PreparedCall{
		target: target, regID: reg.ID, api: reg.Metadata.API, replay: reg.Metadata.Replay, model: model,
		adapter: reg.Adapter, retry: reg.Retry.withDefaults(),
		body: body, sum: sha256.Sum256(body),
	}, nil
}

// Target is the call's provider and model.
func (p *PreparedCall) Target() Target { return p.target }

// Model is the model and capabilities the call was prepared for.
func (p *PreparedCall) Model() Model { return p.model }

// API is the wire API of the call's adapter.
func (p *PreparedCall) API() string { return p.api }

// Replay is how history is replayed to the call's API.
func (p *PreparedCall) Replay() Replay { return p.replay }

// Retry is the retry policy captured at preparation.
func (p *PreparedCall) Retry() RetryPolicy { return p.retry }

// Body returns a copy of the request body every attempt sends.
func (p *PreparedCall) Body() []byte { return bytes.Clone(p.body) }

// claim marks the call dispatched; only the first claim succeeds.
func (p *PreparedCall) claim() error {
	if !p.dispatched.CompareAndSwap(false, true) {
		return Fail(ClassInvalidCall, "prepared call dispatched twice", nil)
	}
	return nil
}

// attempt sends the body once. The body must be exactly what was prepared.
// Whatever the adapter does, the attempt ends as a response or a failure:
// a panic or a response-less success is a PROVIDER_ERROR, not a crash.
func (p *PreparedCall) attempt(ctx context.Context, sink Sink) (resp *assemble.Response, err error) {
	if err := ctx.Err(); err != nil {
		return nil, AsFailure(err)
	}
	if sha256.Sum256(p.body) != p.sum {
		return nil, Fail(ClassInvalidCall, "prepared body changed after preparation", nil)
	}
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, Fail(ClassProvider, "adapter panicked", fmt.Errorf("provider: adapter %s panicked: %T", p.regID, v))
		}
	}()
	resp, err = p.adapter.Stream(ctx, p.body, sink)
	if err == nil && resp == nil {
		err = Fail(ClassProvider, "adapter returned no response", nil)
	}
	return resp, err
}
