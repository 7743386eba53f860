package worker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestSettledDeliveryLevels: the worker's JSON log parses line by line,
// and a delivery settles at the level its turn's end calls for: a
// completed turn at info, a turn failed on its budget at warn with its
// reason.
func TestSettledDeliveryLevels(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	var logs syncBuffer
	e.startWorkerWith(func(o *worker.Options) { o.Log = zerolog.New(&logs).Level(zerolog.InfoLevel) })
	e.serveTools(map[string]toolworker.Handler{"alpha": echoTool("alpha")})
	ctx := ctxFor(t)
	c := e.client()
	for _, req := range []wire.TurnRequest{
		{SessionID: "lv", TurnID: "ok", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hello"}}},
		{SessionID: "lv", TurnID: "over", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "use the tool"}},
			Tools: []wire.Tool{tool("alpha")}, Budgets: &wire.Budgets{MaxIterations: 1}},
	} {
		turn, err := c.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := turn.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}

	type line struct {
		Level   string `json:"level"`
		Message string `json:"message"`
		TurnID  string `json:"turn_id"`
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
	}
	settled := map[string]line{}
	eventually(t, "both deliveries to settle", func() bool {
		settled = map[string]line{}
		for i, raw := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var l line
			if err := json.Unmarshal([]byte(raw), &l); err != nil {
				t.Fatalf("log line %d is not JSON: %v\n%s", i+1, err, raw)
			}
			if l.Message == "delivery settled" {
				settled[l.TurnID] = l
			}
		}
		return len(settled) == 2
	})
	for turn, want := range map[string]line{
		"ok":   {Level: "info", Message: "delivery settled", TurnID: "ok", Outcome: wire.EventTurnCompleted},
		"over": {Level: "warn", Message: "delivery settled", TurnID: "over", Outcome: wire.EventTurnFailed, Reason: "budget_exceeded"},
	} {
		if got := settled[turn]; got != want {
			t.Errorf("turn %s settled with %+v; want %+v", turn, got, want)
		}
	}
}
