package replay

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/apis"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/scripted"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// replayDrainTimeout bounds the replay worker's drain once the turn ended.
const replayDrainTimeout = 5 * time.Second

// workerConfig is the replay worker's configuration. base is the
// recording workers' (--config): its providers, models, capabilities,
// routes, limits and history options. Without it one is derived from the
// recording: a provider per provider the turn called (through the API a
// step's state names, Chat Completions where none does), a model per
// target with the defaults, and the turn's route over the targets in the
// order the turn first called them. Either way the budgets are the turn's
// as recorded (its turn.accepted event), and the worker runs one turn on
// one replica.
func (r *Recording) workerConfig(base *config.Config, script *scripted.Script) (*config.Config, error) {
	var targets []config.Target
	for _, c := range script.Calls {
		t := config.Target{Provider: c.Target.Provider, Model: c.Target.Model}
		if !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	var cfg config.Config
	if base != nil {
		cfg = *base
		cfg.Providers, cfg.Models = slices.Clone(base.Providers), slices.Clone(base.Models) // ApplyDefaults writes to them
		if _, ok := cfg.Route(r.Route); !ok {
			return nil, fmt.Errorf("replay: the config has no route %q, the turn's", routeName(r.Route))
		}
	} else {
		cfg.NATS.Prefix = wire.DefaultPrefix
		cfg.Routes = []config.Route{{Name: routeName(r.Route), Targets: targets}}
		for _, t := range targets {
			if _, ok := cfg.Provider(t.Provider); !ok {
				api := config.API(openaichat.API.Name)
				if a, ok := r.APIs[t.Provider]; ok {
					api = config.API(a)
				}
				cfg.Providers = append(cfg.Providers, config.Provider{Name: t.Provider, API: api, BaseURL: "http://replay.invalid"})
			}
			cfg.Models = append(cfg.Models, config.Model{Provider: t.Provider, Name: t.Model})
		}
	}
	for _, t := range targets {
		p, ok := cfg.Provider(t.Provider)
		if !ok {
			return nil, fmt.Errorf("replay: the turn called provider %q, which the config does not name", t.Provider)
		}
		if api, ok := apis.Lookup(string(p.API)); !ok || api.Frames == nil {
			return nil, fmt.Errorf("%w: provider %q speaks %s, whose recorded frames cannot be read back", ErrUnsupportedAPI, p.Name, p.API)
		}
	}
	b, err := r.budgets()
	if err != nil {
		return nil, err
	}
	cfg.Budgets.MaxIterations, cfg.Budgets.MaxToolCalls, cfg.Budgets.WallClock = b.MaxIterations, b.MaxToolCalls, config.Duration(time.Duration(b.WallClockMS)*time.Millisecond)
	cfg.Worker.Concurrency, cfg.Worker.DrainTimeout = 1, config.Duration(replayDrainTimeout)
	cfg.NATS.URL, cfg.NATS.Replicas = "", 1
	cfg.ApplyDefaults()
	return &cfg, nil
}

func routeName(r string) string {
	if r == "" {
		return config.DefaultRoute
	}
	return r
}

// budgets are the turn's effective budgets, as its first turn.accepted
// event reports them.
func (r *Recording) budgets() (wire.Budgets, error) {
	for _, ev := range r.Events {
		if ev.Type != wire.EventTurnAccepted {
			continue
		}
		a, err := wire.DecodePayload[wire.TurnAccepted](ev)
		if err != nil {
			return wire.Budgets{}, fmt.Errorf("replay: the turn's turn.accepted event: %w", err)
		}
		return wire.Budgets{MaxIterations: a.MaxIterations, MaxToolCalls: a.MaxToolCalls, WallClockMS: a.WallClockMS}, nil
	}
	return wire.Budgets{}, fmt.Errorf("replay: turn %s has no %s event", r.Turn, wire.EventTurnAccepted)
}

// Request is the turn's request as far as the streams keep it: its input
// messages (the turn's first messages) and route, and its tools as the
// names the model called, with no schema. A request's system prompt and
// tool schemas are not recorded anywhere; the scripted adapter ignores the
// request body, so they change nothing the provider answers.
func (r *Recording) Request() wire.TurnRequest {
	req := wire.TurnRequest{SessionID: r.Session, TurnID: r.Turn, Route: r.Route}
	for _, m := range r.Messages {
		if m.Step != 0 || (m.Role != wire.RoleUser && m.Role != wire.RoleSystem) {
			break
		}
		req.Input = append(req.Input, wire.InputMessage{Role: m.Role, Content: m.Content})
	}
	unknown := map[string]bool{} // calls the turn loop refused: their tool was not offered
	for _, ev := range r.Events {
		if res, err := wire.DecodePayload[wire.ToolResultEvent](ev); err == nil && res.PlanningError == wire.PlanningUnknownTool {
			unknown[res.CallID] = true
		}
	}
	offered := map[string]bool{}
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if !unknown[c.ID] && !offered[c.Name] {
				offered[c.Name] = true
				req.Tools = append(req.Tools, wire.Tool{Name: c.Name, Description: "a recorded tool (its schema is not recorded)"})
			}
		}
	}
	return req
}

// tools answers the replayed turn's tool calls from the recorded results,
// by call id, so no tool runs again: a recorded result is returned as it
// was stored; a call the worker answered itself when it timed out waits
// for its deadline again; a call the recording has no result for (the
// replay diverged) gets an error result that says so.
func (r *Recording) tools(req wire.TurnRequest) map[string]toolworker.Handler {
	results := map[string]wire.Message{}
	for _, m := range r.Messages {
		if m.Role == wire.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	answer := func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		m, ok := results[call.CallID]
		switch {
		case !ok:
			return toolworker.Result{Content: "replay: the recorded turn has no result for this call", IsError: true}, nil
		case m.Synthesized:
			<-ctx.Done()
			return toolworker.Result{}, ctx.Err()
		}
		return toolworker.Result{Content: m.Content, IsError: m.IsError}, nil
	}
	handlers := make(map[string]toolworker.Handler, len(req.Tools))
	for _, t := range req.Tools {
		handlers[t.Name] = answer
	}
	return handlers
}

// seed stores the session as it was when the turn started into the
// replay's server: the log before the turn and the earlier turns' state.
func (r *Recording) seed(ctx context.Context, js jetstream.JetStream, subjects wire.Subjects) error {
	for i := range r.Before {
		data, err := wire.JSON.Marshal(&r.Before[i])
		if err != nil {
			return fmt.Errorf("replay: seed the session log: %w", err)
		}
		msg := &nats.Msg{Subject: subjects.Message(r.Session), Data: data, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("replay: seed the session log: %w", err)
		}
	}
	kv, err := js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		return fmt.Errorf("replay: seed the state: %w", err)
	}
	for key, v := range r.State {
		if _, err := kv.Put(ctx, key, v); err != nil {
			return fmt.Errorf("replay: seed the state: %w", err)
		}
	}
	return nil
}

// instantClock makes provider retries wait for nothing: the recorded
// failures replay at once, in the recorded order.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Now() }
func (instantClock) Sleep(ctx context.Context, _ time.Duration) error {
	return ctx.Err()
}

var _ provider.Clock = instantClock{}
