package toolworker_test

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestServeAnswersRepeatedCallFromClaim dispatches the same call twice (two
// stream messages, as a lost publish ack retried under another message id
// would): the second delivery finds the claim done and is answered with the
// recorded result, without running the tool again; both are acked and the
// session holds one result.
func TestServeAnswersRepeatedCallFromClaim(t *testing.T) {
	for _, codec := range []wire.Codec{wire.JSON, wire.Msgpack} {
		t.Run(codec.ContentType(), func(t *testing.T) {
			e := newEnv(t, &bus.Topology{ToolAckWait: time.Second})
			results := e.follow(t, "s1")
			var ran atomic.Int32
			answered := newSignal(`"from_claim":true`)
			e.serve(t, map[string]toolworker.Handler{
				tool: func(context.Context, wire.ToolCall) (toolworker.Result, error) {
					if ran.Add(1) > 1 {
						return toolworker.Result{Content: "second run"}, nil
					}
					return toolworker.Result{Content: "first run", IsError: true}, nil
				},
			}, toolworker.WithLogger(testLogger(t, answered)))

			call := newCall("s1", tool, "c1")
			e.publishCall(t, codec, call)
			want := wire.ToolResult{SessionID: "s1", TurnID: "t1", CallID: "c1", Token: call.Token, Content: "first run", IsError: true}
			if _, got := results.next(t); got != want {
				t.Fatalf("result = %+v; want %+v", got, want)
			}
			e.publishCall(t, codec, call)
			await(t, answered.C, "the repeated call to be answered from its claim")
			e.toolConsumer(t)
			if n := ran.Load(); n != 1 {
				t.Errorf("handler runs = %d; want 1", n)
			}
			if n := e.storedResults(t, "s1"); n != 1 {
				t.Errorf("stored results = %d; want 1", n)
			}
		})
	}
}

// TestServeLeavesCallOfLiveClaimer dispatches the same call twice while its
// first run is still going: the second delivery watches the claim, sees the
// running delivery renew it and leaves the call to it. The tool runs once;
// once it answers, the second delivery is answered from the claim.
func TestServeLeavesCallOfLiveClaimer(t *testing.T) {
	e := newEnv(t, &bus.Topology{ToolAckWait: time.Second})
	results := e.follow(t, "s1")
	started, release := make(chan struct{}), make(chan struct{})
	var ran atomic.Int32
	left := newSignal("call claimed by a live tool worker; leaving it")
	e.serve(t, map[string]toolworker.Handler{
		tool: func(ctx context.Context, _ wire.ToolCall) (toolworker.Result, error) {
			if ran.Add(1) == 1 {
				close(started)
			}
			select {
			case <-release:
				return toolworker.Result{Content: "slow"}, nil
			case <-ctx.Done():
				return toolworker.Result{}, ctx.Err()
			}
		},
	}, toolworker.WithConcurrency(2), toolworker.WithLogger(testLogger(t, left)))

	call := newCall("s1", tool, "c1")
	e.publishCall(t, wire.JSON, call)
	await(t, started, "the first run to start")
	e.publishCall(t, wire.JSON, call)
	await(t, left.C, "the second delivery to leave the call to the live claimer")
	close(release)

	if _, got := results.next(t); got.Content != "slow" || got.IsError || got.Synthesized || got.Token != call.Token {
		t.Errorf("result = %+v; want the first run's", got)
	}
	e.toolConsumer(t)
	if n := ran.Load(); n != 1 {
		t.Errorf("handler runs = %d; want 1", n)
	}
	if n := e.storedResults(t, "s1"); n != 1 {
		t.Errorf("stored results = %d; want 1", n)
	}
}

// TestServeClaimsUnderEncodedKey: a call whose id holds characters no key
// may (dots, wildcards, spaces, non-ASCII) is claimed under its encoded
// key, which starts with the tool's name.
func TestServeClaimsUnderEncodedKey(t *testing.T) {
	e := newEnv(t, &bus.Topology{})
	results := e.follow(t, "s1")
	e.serve(t, map[string]toolworker.Handler{tool: ok("fine")})
	const odd = "call/ä.*.> x"
	e.publishCall(t, wire.JSON, newCall("s1", tool, odd))
	if _, got := results.next(t); got.CallID != odd || got.Content != "fine" {
		t.Errorf("result = %+v; want call %q answered", got, odd)
	}
	if rec := e.claim(t, "s1", "t1", odd); rec["state"] != "done" {
		t.Errorf("claim = %v; want state done", rec)
	}
	kv, err := e.js.KeyValue(t.Context(), bus.ClaimsBucket)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(t.Context(), jetstream.MetaOnly())
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if !strings.HasPrefix(k, tool+".s1.t1.") {
			t.Errorf("claim key %q; want it under %s.s1.t1.", k, tool)
		}
	}
}

// callToken is the alphabet of an encoded call id, a subset of what a key
// token may hold ([-/_=a-zA-Z0-9]).
var callToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestClaimKey(t *testing.T) {
	long := strings.Repeat("x", 128)
	tests := []struct {
		tool, session, turn, call string
	}{
		{"get_time", "s1", "t1", "call_1"},
		{"get_time", "s1", "t1", "a.b"},
		{"get_time", "s1", "t1", "*"},
		{"get_time", "s1", "t1", ">"},
		{"get_time", "s1", "t1", " "},
		{"get_time", "s1", "t1", "é"},
		{"get_time", "s1", "t1", "\x00\xff"},
		{"calculate", "s1", "t1", "call_1"},
		{strings.Repeat("n", 64), long, long, long},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		key := bus.ClaimKey(tt.tool, tt.session, tt.turn, tt.call)
		tokens := strings.Split(key, ".")
		if len(tokens) != 4 || tokens[0] != tt.tool || tokens[1] != tt.session || tokens[2] != tt.turn {
			t.Errorf("ClaimKey(%q, %q, %q, %q) = %q; want <tool>.<session>.<turn>.<encoded call>", tt.tool, tt.session, tt.turn, tt.call, key)
			continue
		}
		if !callToken.MatchString(tokens[3]) {
			t.Errorf("ClaimKey(%q, %q, %q, %q) = %q; want a call token of [A-Za-z0-9_-]", tt.tool, tt.session, tt.turn, tt.call, key)
		}
		if prev, dup := seen[key]; dup {
			t.Errorf("ClaimKey(%s) = ClaimKey(%s) = %q; want distinct keys", tt.tool+"/"+tt.call, prev, key)
		}
		seen[key] = tt.tool + "/" + tt.call
	}
}
