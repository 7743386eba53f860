package turn

import (
	"testing"

	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestJudgeResult: a result naming the turn is accepted only for a pending,
// unanswered call of the turn's session, with the token issued for that
// call and its tool; every other is rejected with its reason.
func TestJudgeResult(t *testing.T) {
	key, err := calltoken.NewKey([]byte("judge-result test key of 32 byte"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := calltoken.NewKey([]byte("another fleet's key, of 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string]string{"call_a": "a", "call_b": "b", "call_done": "a"}
	answered := map[string]*wire.Message{"call_done": {Role: wire.RoleTool}}
	tokA := key.Sign("s1", "t1", "call_a", "a")
	result := func(session, call, token string) wire.ToolResult {
		return wire.ToolResult{SessionID: session, TurnID: "t1", CallID: call, Token: token, Content: "x"}
	}
	tests := []struct {
		name       string
		res        wire.ToolResult
		wantTool   string
		wantReason string
	}{
		{"the call's own token", result("s1", "call_a", tokA), "a", ""},
		{"another call's token", result("s1", "call_b", tokA), "b", wire.ResultRejectedBadToken},
		{"the token of the same call id to another tool", result("s1", "call_b", key.Sign("s1", "t1", "call_b", "a")), "b", wire.ResultRejectedBadToken},
		{"another session's token", result("s1", "call_a", key.Sign("s2", "t1", "call_a", "a")), "a", wire.ResultRejectedBadToken},
		{"another turn's token", result("s1", "call_a", key.Sign("s1", "t0", "call_a", "a")), "a", wire.ResultRejectedBadToken},
		{"a token of another key", result("s1", "call_a", other.Sign("s1", "t1", "call_a", "a")), "a", wire.ResultRejectedBadToken},
		{"a made-up token", result("s1", "call_a", "made-up"), "a", wire.ResultRejectedBadToken},
		{"no token", result("s1", "call_a", ""), "a", wire.ResultRejectedBadToken},
		{"an unknown call", result("s1", "call_x", key.Sign("s1", "t1", "call_x", "a")), "", wire.ResultRejectedUnknownCall},
		{"another session's result", result("s2", "call_a", key.Sign("s2", "t1", "call_a", "a")), "a", wire.ResultRejectedWrongSession},
		{"another session's unknown call", result("s2", "call_x", ""), "", wire.ResultRejectedWrongSession},
		{"an answered call", result("s1", "call_done", key.Sign("s1", "t1", "call_done", "a")), "a", wire.ResultRejectedDuplicate},
		{"an answered call, forged", result("s1", "call_done", tokA), "a", wire.ResultRejectedBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, reason := judgeResult(key, "s1", "t1", tt.res, pending, answered)
			if tool != tt.wantTool || reason != tt.wantReason {
				t.Errorf("judgeResult(%+v) = %q, %q; want %q, %q", tt.res, tool, reason, tt.wantTool, tt.wantReason)
			}
		})
	}
}
