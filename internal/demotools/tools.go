package demotools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Tool names.
const (
	GetTime   = "get_time"
	Calculate = "calculate"
)

// Tools returns the definitions of the demo tools, to offer in a TurnRequest.
// Each call returns fresh values the caller may change.
func Tools() []wire.Tool {
	return []wire.Tool{
		{
			Name:        GetTime,
			Description: "Returns the current time in an IANA time zone as RFC 3339, followed by the zone name.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"timezone": map[string]any{
						"type":        "string",
						"description": "IANA time zone, e.g. Europe/Paris",
						"default":     "UTC",
					},
				},
			},
		},
		{
			Name: Calculate,
			Description: "Evaluates an arithmetic expression with + - * / % ^ (power), parentheses, " +
				"unary minus and decimal numbers, and returns the resulting number.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"expression": map[string]any{
						"type":        "string",
						"description": "arithmetic such as 17 * 23",
						"examples":    []any{"17 * 23"},
					},
				},
				"required": []any{"expression"},
			},
		},
	}
}

// Handlers returns the handlers of the demo tools, keyed by tool name, for
// toolworker.Serve. get_time reads the system clock.
func Handlers() map[string]toolworker.Handler { return handlers(time.Now) }

// Idempotent names the demo tools whose calls may run again after their
// tool worker died mid-call, for toolworker.WithIdempotent: both, since
// neither has an effect beyond its answer (get_time reads the clock,
// calculate computes). Serve them with
// toolworker.WithIdempotent(demotools.Idempotent()...).
func Idempotent() []string { return []string{GetTime, Calculate} }

// handlers builds the handlers with an injected clock.
func handlers(now func() time.Time) map[string]toolworker.Handler {
	return map[string]toolworker.Handler{
		GetTime:   clock{now: now}.getTime,
		Calculate: calculate,
	}
}

// failure is an error result: a message the model reads.
func failure(format string, args ...any) (toolworker.Result, error) {
	return toolworker.Result{Content: fmt.Sprintf(format, args...), IsError: true}, nil
}

// decodeArgs decodes a call's JSON arguments into v. Unknown fields are
// ignored: models add them.
func decodeArgs(call wire.ToolCall, v any) error {
	if err := json.Unmarshal([]byte(call.Arguments), v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// calculate evaluates the "expression" argument.
func calculate(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
	var args struct {
		Expression *string `json:"expression"`
	}
	if err := decodeArgs(call, &args); err != nil {
		return failure("%v", err)
	}
	if args.Expression == nil {
		return failure("missing required argument \"expression\"")
	}
	v, err := evaluate(*args.Expression)
	if err != nil {
		return failure("%v", err)
	}
	return toolworker.Result{Content: formatNumber(v)}, nil
}
