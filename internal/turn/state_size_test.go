package turn_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/turn"
	"github.com/turnstream/turnstream/pkg/wire"
)

// echoExec answers with four tool calls whose provider ids are huge and
// 60 KiB of reasoning of control characters (six bytes each in JSON) to echo: each within its limit, together a
// step replay state over the server's max payload.
type echoExec struct{}

func (echoExec) Execute(_ context.Context, chain []provider.Target, _ *provider.Request, _ provider.Observer) (*provider.Result, error) {
	echo := strings.Repeat("\x01", 60<<10)
	resp := &assemble.Response{Reasoning: echo, Echo: echo, FinishReason: wire.FinishToolCalls, Terminal: true}
	for i := range 4 {
		resp.ToolCalls = append(resp.ToolCalls, assemble.ToolCall{Index: i, ProviderID: fmt.Sprintf("call%d_", i) + strings.Repeat("a", 230<<10), Name: "f", Arguments: `{}`, Complete: true})
	}
	return &provider.Result{Response: resp, Target: chain[0], API: deepseek.API.Name, Replay: deepseek.API.Replay,
		Model:    provider.Model{Name: chain[0].Model, ContextTokens: 100_000, Capabilities: provider.Capabilities{Text: true, Tools: true, NativeToolHistory: true, ReasoningEcho: true}},
		Attempts: []provider.Attempt{{Number: 1, Target: chain[0]}}}, nil
}

// TestStateTooLargeIsNotRetried: a step state that cannot fit the server
// ends the turn's delivery with wire.ErrRecordTooLarge, which the worker
// fails at once, instead of an error that would be redelivered (and call
// the provider again) until the deliveries ran out.
func TestStateTooLargeIsNotRetried(t *testing.T) {
	e := newEnv(t)
	ctx := ctxFor(t)
	st, err := e.bus.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := &wire.TurnRequest{SessionID: "s1", TurnID: "t1", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "go"}}, Tools: []wire.Tool{{Name: "f"}}}
	bv := config.BudgetValues{MaxIterations: 4, MaxToolCalls: 4, MaxRepeatedToolFailures: 2, WallClock: config.Duration(wait)}
	loop := &turn.Loop{Exec: echoExec{}, State: st, Routes: routes{}, ToolTimeout: time.Second, CallKey: testKey, Log: testLog(t), Budgets: config.Budgets{BudgetValues: bv, Ceiling: bv}}
	log, err := e.bus.LoadLog(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	out := loop.Run(ctx, turn.Input{Request: req, Log: log.Messages, Stored: log.Stored, Delivery: 1, Writer: e.bus.Turn("s1", "t1", wire.JSON, log),
		OpenResults: func(ctx context.Context, from turn.ResultsFrom) (turn.Results, error) {
			f, err := e.bus.FollowResults(ctx, "s1", from.After, from.Since)
			if err != nil {
				return nil, err
			}
			return results{f}, nil
		}})
	if out.Err == nil || !errors.Is(out.Err, wire.ErrRecordTooLarge) {
		t.Errorf("Run() error = %v; want one wrapping wire.ErrRecordTooLarge", out.Err)
	}
}
