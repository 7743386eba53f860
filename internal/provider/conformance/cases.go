package conformance

import (
	"net/http"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The seed 004 calls: two tools whose fragments interleave.
const (
	readArgs   = `{"path":"src/main.go"}`
	searchArgs = `{"query":"parser"}`
)

// Cases returns every conformance case. Time-dependent values (an HTTP
// date hint) are computed now.
func Cases() []Case {
	ok := func(text, finish string) Want {
		return Want{Text: text, Finish: finish}
	}
	u := func(in, cached, out int64) *wire.Usage {
		return &wire.Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: out}
	}
	interleaved := []Ev{
		start(0, "call_a", "read"), args(0, `{"pa`), start(1, "call_b", "search"), metadata(),
		args(1, `{"query":"par`), args(0, `th":"src/`), args(1, `ser"}`), done(1), args(0, `main.go"}`), done(0),
	}
	cases := []Case{
		{Name: "text", Tr: Transcript{Events: []Ev{text("Hello, "), text("world."), finish("stop"), usage(12, 3, 0)}},
			Want: Want{Text: "Hello, world.", Finish: wire.FinishStop, Usage: u(12, 0, 3)}},
		{Name: "text with a metadata frame first", Tr: Transcript{Events: []Ev{metadata(), text("Hi"), finish("stop")}},
			Want: ok("Hi", wire.FinishStop)},
		{Name: "keep-alive comments between frames", Tr: Transcript{Events: []Ev{comment(), text("Hi"), comment(), finish("stop")}},
			Want: ok("Hi", wire.FinishStop)},

		// Seed 004's adversarial stream: two interleaved tool calls, a
		// metadata frame, and a close before one call completes.
		{Name: "adversarial: close before a call completes", Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, `{"path":"src/`), start(1, "call_b", "search"), metadata(),
				args(1, searchArgs), done(1)},
			End: EndEOF,
		}, Want: Want{Class: provider.ClassStreamClosed}},
		{Name: "adversarial: disconnect before a call completes", Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, `{"path":"src/`), start(1, "call_b", "search"), metadata(),
				args(1, searchArgs), done(1)},
			End: EndDisconnect,
		}, Want: Want{Class: provider.ClassTransport}},
		{Name: "adversarial: close after the finish, before the terminal marker", Tr: Transcript{
			Events: append(append([]Ev{}, interleaved...), finish("tool_calls")),
			End:    EndEOF,
		}, Want: Want{Class: provider.ClassStreamClosed}},
		{Name: "adversarial: valid completion", Tr: Transcript{
			Events: append(append([]Ev{text("Let me look. ")}, interleaved...), finish("tool_calls"), usage(50, 20, 0)),
		}, Want: Want{
			Text: "Let me look. ", Finish: wire.FinishToolCalls, Usage: u(50, 0, 20), Executable: true,
			Calls: []Call{{ID: "call_a", Name: "read", Arguments: readArgs, Complete: true}, {ID: "call_b", Name: "search", Arguments: searchArgs, Complete: true}},
		}},
		{Name: "arguments split inside an escape", Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, `{"path":"a\`), args(0, `"b\u00`), args(0, `e9"}`), done(0), finish("tool_calls")},
		}, Want: Want{Finish: wire.FinishToolCalls, Executable: true,
			Calls: []Call{{ID: "call_a", Name: "read", Arguments: `{"path":"a\"b\u00e9"}`, Complete: true}}}},
		{Name: "malformed arguments are not complete", Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, `{"path":`), done(0), start(1, "call_b", "search"), args(1, searchArgs), done(1), finish("tool_calls")},
		}, Want: Want{Finish: wire.FinishToolCalls, Executable: false,
			Calls: []Call{{ID: "call_a", Name: "read", Arguments: `{"path":`, Complete: false}, {ID: "call_b", Name: "search", Arguments: searchArgs, Complete: true}}}},
		{Name: "a tool call under a stop finish makes a tool turn", Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, readArgs), done(0), finish("stop")},
		}, Want: Want{Finish: wire.FinishToolCalls, Executable: true,
			Calls: []Call{{ID: "call_a", Name: "read", Arguments: readArgs, Complete: true}}}},

		// Real shapes of Anthropic Messages that every adapter must take:
		// calls one after the other, a call cut by the token limit.
		{Name: "parallel tool calls one after the other", Tr: Transcript{
			Events: []Ev{text("Checking both. "), start(0, "toolu_01A", "read"), args(0, `{"path":`), args(0, `"src/main.go"}`), done(0),
				start(1, "toolu_01B", "search"), args(1, `{"query":"par`), args(1, `ser"}`), done(1), finish("tool_calls"), usage(80, 40, 0)},
		}, Want: Want{
			Text: "Checking both. ", Finish: wire.FinishToolCalls, Usage: u(80, 0, 40), Executable: true,
			Calls: []Call{{ID: "toolu_01A", Name: "read", Arguments: readArgs, Complete: true}, {ID: "toolu_01B", Name: "search", Arguments: searchArgs, Complete: true}},
		}},
		{Name: "length in the middle of a call", Tr: Transcript{
			Events: []Ev{text("Reading it. "), start(0, "toolu_01C", "read"), args(0, `{"path":"src/ma`), done(0), finish("length")},
		}, Want: Want{Text: "Reading it. ", Finish: wire.FinishLength, Executable: false,
			Calls: []Call{{ID: "toolu_01C", Name: "read", Arguments: `{"path":"src/ma`, Complete: false}}}},
		{Name: "length right after a call starts", Needs: []Feature{TruncatedCalls}, Tr: Transcript{
			Events: []Ev{start(0, "toolu_01D", "read"), done(0), finish("length")},
		}, Want: Want{Finish: wire.FinishLength, Executable: false, Calls: []Call{{ID: "toolu_01D", Name: "read", Arguments: "{}", Complete: false}}}},

		// Signed and redacted reasoning is replay state: kept, in order,
		// never visible.
		{Name: "signed thinking before a tool call", Needs: []Feature{Signatures}, Tr: Transcript{
			Events: []Ev{reasoning("The user wants "), reasoning("the file."), signature("EqQBCgIYAhIM1gbcDa9GJwZA"),
				start(0, "toolu_01E", "read"), args(0, `{"pa`), args(0, `th":"src/main.go"}`), done(0), finish("tool_calls"), usage(30, 25, 0)},
		}, Want: Want{
			Reasoning: "The user wants the file.", Finish: wire.FinishToolCalls, Usage: u(30, 0, 25), Executable: true,
			Calls: []Call{{ID: "toolu_01E", Name: "read", Arguments: readArgs, Complete: true}},
			Echo:  []string{"EqQBCgIYAhIM1gbcDa9GJwZA"},
		}},
		{Name: "two signed thinking blocks around text", Needs: []Feature{Signatures}, Tr: Transcript{
			Events: []Ev{reasoning("First."), signature("sig_one"), text("Step one. "), reasoning("Second."), signature("sig_two"), text("Done."), finish("stop")},
		}, Want: Want{Reasoning: "First.Second.", Text: "Step one. Done.", Finish: wire.FinishStop, Echo: []string{"sig_one", "sig_two"}}},
		{Name: "redacted thinking is kept opaque", Needs: []Feature{Signatures}, Tr: Transcript{
			Events: []Ev{redacted("EmwKAhgBEgy3va3pzixLafPsn4a"), reasoning("Checking."), signature("sig_three"), text("Done."), finish("stop")},
		}, Want: Want{Reasoning: "Checking.", Text: "Done.", Finish: wire.FinishStop, Echo: []string{"EmwKAhgBEgy3va3pzixLafPsn4a", "sig_three"}}},

		// Finish variants.
		{Name: "finish length", Tr: Transcript{Events: []Ev{text("cut"), finish("length")}}, Want: ok("cut", wire.FinishLength)},
		{Name: "finish content_filter", Tr: Transcript{Events: []Ev{text("no"), finish("content_filter")}}, Want: ok("no", wire.FinishContentFilter)},
		{Name: "finish error is incomplete", Tr: Transcript{Events: []Ev{text("par"), finish("error")}}, Want: ok("par", wire.FinishIncomplete)},
		{Name: "finish end_turn", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("a"), finish("end_turn")}}, Want: ok("a", wire.FinishStop)},
		{Name: "finish MAX_TOKENS", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("a"), finish("MAX_TOKENS")}}, Want: ok("a", wire.FinishLength)},
		{Name: "finish SAFETY", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("a"), finish("SAFETY")}}, Want: ok("a", wire.FinishContentFilter)},
		{Name: "finish abort", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("a"), finish("abort")}}, Want: ok("a", wire.FinishIncomplete)},
		{Name: "finish insufficient_system_resource", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("a"), finish("insufficient_system_resource")}}, Want: ok("a", wire.FinishIncomplete)},
		{Name: "finish refusal keeps its raw value", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("I can't help with that."), finish("refusal")}},
			Want: Want{Text: "I can't help with that.", Finish: wire.FinishContentFilter, RawFinish: "refusal"}},
		{Name: "finish pause_turn is incomplete", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("Searching"), finish("pause_turn")}},
			Want: Want{Text: "Searching", Finish: wire.FinishIncomplete, RawFinish: "pause_turn"}},
		{Name: "finish unknown value", Needs: []Feature{RawFinish}, Tr: Transcript{Events: []Ev{text("a"), finish("banana")}}, Want: ok("a", wire.FinishUnknown)},
		{Name: "finish tool_calls without calls", Needs: []Feature{ChatQuirks}, Tr: Transcript{Events: []Ev{text("a"), finish("tool_calls")}}, Want: ok("a", wire.FinishUnknown)},
		{Name: "finish repeated then null keeps the first", Needs: []Feature{ChatQuirks}, Tr: Transcript{Events: []Ev{text("a"), finish("length"), finish("length"), finish("")}}, Want: ok("a", wire.FinishLength)},
		{Name: "no finish at all is unknown", Needs: []Feature{ChatQuirks}, Tr: Transcript{Events: []Ev{text("a")}}, Want: ok("a", wire.FinishUnknown)},

		// Usage, once, with final values, whatever the placement.
		{Name: "usage in its own chunk", Tr: Transcript{Events: []Ev{text("a"), finish("stop"), usage(20, 5, 0)}, Placement: UsageChunk},
			Want: Want{Text: "a", Finish: wire.FinishStop, Usage: u(20, 0, 5)}},
		{Name: "usage on the finish chunk", Needs: []Feature{UsagePlacements}, Tr: Transcript{Events: []Ev{text("a"), finish("stop"), usage(20, 5, 0)}, Placement: UsageOnFinish},
			Want: Want{Text: "a", Finish: wire.FinishStop, Usage: u(20, 0, 5)}},
		{Name: "usage twice", Needs: []Feature{UsagePlacements}, Tr: Transcript{Events: []Ev{text("a"), finish("stop"), usage(20, 5, 0)}, Placement: UsageTwice},
			Want: Want{Text: "a", Finish: wire.FinishStop, Usage: u(20, 0, 5)}},
		{Name: "usage cumulative on every chunk", Needs: []Feature{UsagePlacements}, Tr: Transcript{Events: []Ev{text("a "), text("b "), text("c"), finish("stop"), usage(20, 5, 0)}, Placement: UsageCumulative},
			Want: Want{Text: "a b c", Finish: wire.FinishStop, Usage: u(20, 0, 5)}},
		{Name: "usage inside the choice", Needs: []Feature{UsagePlacements}, Tr: Transcript{Events: []Ev{text("a"), finish("stop"), usage(20, 5, 0)}, Placement: UsageInChoice},
			Want: Want{Text: "a", Finish: wire.FinishStop, Usage: u(20, 0, 5)}},
		{Name: "usage with cached input is disjoint", Tr: Transcript{Events: []Ev{text("a"), finish("stop"), usage(100, 7, 60)}},
			Want: Want{Text: "a", Finish: wire.FinishStop, Usage: u(40, 60, 7)}},

		// Reasoning stays out of visible text and deltas.
		{Name: "reasoning then text", Needs: []Feature{Reasoning}, Tr: Transcript{Events: []Ev{reasoning("Weigh "), reasoning("options."), text("Answer."), finish("stop")}},
			Want: Want{Reasoning: "Weigh options.", Text: "Answer.", Finish: wire.FinishStop}},
		{Name: "length inside reasoning", Needs: []Feature{Reasoning}, Tr: Transcript{Events: []Ev{reasoning("Still thinking"), finish("length")}},
			Want: Want{Reasoning: "Still thinking", Finish: wire.FinishLength}},

		// A refusal is the message's visible text in every wire API (Chat
		// Completions' delta.refusal with content null, Responses' refusal
		// part), under the provider's own finish, within the text limits.
		{Name: "refusal", Tr: Transcript{Events: []Ev{refusal("I'm sorry, "), refusal("but I can't help with that."), finish("stop"), usage(20, 9, 0)}},
			Want: Want{Text: "I'm sorry, but I can't help with that.", Finish: wire.FinishStop, Usage: u(20, 0, 9)}},
		{Name: "refusal over the text limit", Limits: provider.Limits{MaxTextBytes: 37}, Tr: Transcript{Events: []Ev{refusal("I'm sorry, "), refusal("but I can't help with that."), finish("stop")}},
			Want: tooLarge(provider.LimitTextBytes)},
		{Name: "refusal at the text limit", Limits: provider.Limits{MaxTextBytes: 38}, Tr: Transcript{Events: []Ev{refusal("I'm sorry, "), refusal("but I can't help with that."), finish("stop")}},
			Want: ok("I'm sorry, but I can't help with that.", wire.FinishStop)},

		// Streams that do not complete.
		{Name: "empty stop", Tr: Transcript{Events: []Ev{finish("stop")}}, Want: Want{Class: provider.ClassEmpty}},
		{Name: "clean EOF before any finish", Tr: Transcript{Events: []Ev{text("part")}, End: EndEOF}, Want: Want{Class: provider.ClassStreamClosed}},
		{Name: "disconnect mid-stream", Tr: Transcript{Events: []Ev{text("part")}, End: EndDisconnect}, Want: Want{Class: provider.ClassTransport}},
		{Name: "malformed frame", Tr: Transcript{Events: []Ev{text("part")}, Malformed: true}, Want: Want{Class: provider.ClassMalformed}},
		{Name: "stall of comments only hits the idle timeout", Tr: Transcript{Stall: 3 * time.Second, Events: []Ev{text("late"), finish("stop")}}, Want: Want{Class: provider.ClassTimeout}},

		// In-band errors are failures, never completions.
		{Name: "in-band error first", Tr: Transcript{Events: []Ev{inBand("server_error", "upstream failed")}}, Want: Want{Class: provider.ClassServer}},
		{Name: "in-band error after content", Tr: Transcript{Events: []Ev{text("partial "), inBand("server_error", "upstream failed")}}, Want: Want{Class: provider.ClassServer}},
		{Name: "in-band rate limit with a hint", Tr: Transcript{Events: []Ev{inBand("rate_limit_exceeded", "Rate limit reached. Please try again in 1.1s.")}},
			Want: Want{Class: provider.ClassRateLimit, RetryAfter: 1100 * time.Millisecond}},
		{Name: "in-band overloaded error after content", Tr: Transcript{Events: []Ev{text("The first"), inBand("overloaded_error", "Overloaded")}}, Want: Want{Class: provider.ClassServer}},
		{Name: "in-band quota", Tr: Transcript{Events: []Ev{inBand("insufficient_quota", "You exceeded your current quota.")}}, Want: Want{Class: provider.ClassQuota}},

		// Per-attempt limits: crossing one is RESPONSE_TOO_LARGE naming it,
		// an answer at the limits is served.
		{Name: "text over its limit", Limits: provider.Limits{MaxTextBytes: 12}, Tr: Transcript{Events: []Ev{text("Hello, "), text("world."), finish("stop")}},
			Want: tooLarge(provider.LimitTextBytes)},
		{Name: "text at its limit", Limits: provider.Limits{MaxTextBytes: 13}, Tr: Transcript{Events: []Ev{text("Hello, "), text("world."), finish("stop")}},
			Want: ok("Hello, world.", wire.FinishStop)},
		{Name: "reasoning over its limit", Needs: []Feature{Reasoning}, Limits: provider.Limits{MaxReasoningBytes: 13},
			Tr: Transcript{Events: []Ev{reasoning("Weigh "), reasoning("options."), text("Answer."), finish("stop")}}, Want: tooLarge(provider.LimitReasoningBytes)},
		{Name: "reasoning at its limit", Needs: []Feature{Reasoning}, Limits: provider.Limits{MaxReasoningBytes: 14},
			Tr:   Transcript{Events: []Ev{reasoning("Weigh "), reasoning("options."), text("Answer."), finish("stop")}},
			Want: Want{Reasoning: "Weigh options.", Text: "Answer.", Finish: wire.FinishStop}},
		{Name: "tool calls over their limit", Limits: provider.Limits{MaxToolCalls: 1}, Tr: Transcript{
			Events: append(append([]Ev{}, interleaved...), finish("tool_calls")),
		}, Want: tooLarge(provider.LimitToolCalls)},
		{Name: "tool calls at their limit", Limits: provider.Limits{MaxToolCalls: 2}, Tr: Transcript{
			Events: append(append([]Ev{}, interleaved...), finish("tool_calls")),
		}, Want: Want{Finish: wire.FinishToolCalls, Executable: true,
			Calls: []Call{{ID: "call_a", Name: "read", Arguments: readArgs, Complete: true}, {ID: "call_b", Name: "search", Arguments: searchArgs, Complete: true}}}},
		{Name: "arguments over their limit", Limits: provider.Limits{MaxArgumentBytes: len(readArgs) - 1}, Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, readArgs[:5]), args(0, readArgs[5:]), done(0), finish("tool_calls")},
		}, Want: tooLarge(provider.LimitArgumentBytes)},
		{Name: "arguments at their limit", Limits: provider.Limits{MaxArgumentBytes: len(readArgs)}, Tr: Transcript{
			Events: []Ev{start(0, "call_a", "read"), args(0, readArgs[:5]), args(0, readArgs[5:]), done(0), finish("tool_calls")},
		}, Want: Want{Finish: wire.FinishToolCalls, Executable: true, Calls: []Call{{ID: "call_a", Name: "read", Arguments: readArgs, Complete: true}}}},
		// JSON-escaped, "\x01b\x01" is 13 bytes and "\x02\x03i\x04" 19: over 30.
		{Name: "text whose escapes cross the message limit", Limits: provider.Limits{MaxMessageBytes: 30}, Tr: Transcript{Events: []Ev{text("\x01b\x01"), text("\x02\x03i\x04"), finish("stop")}},
			Want: tooLarge(provider.LimitMessageBytes)},

		// HTTP failures and retry hints.
		{Name: "429 retry-after-ms", Tr: Transcript{Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Header: hdr("retry-after-ms", "1500", "x-request-id", "req_1")},
			Want: Want{Class: provider.ClassRateLimit, RetryAfter: 1500 * time.Millisecond, RequestID: "req_1"}},
		{Name: "429 retry-after seconds", Tr: Transcript{Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Header: hdr("retry-after", "2")},
			Want: Want{Class: provider.ClassRateLimit, RetryAfter: 2 * time.Second}},
		{Name: "429 retry-after fractional seconds", Tr: Transcript{Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Header: hdr("retry-after", "0.5")},
			Want: Want{Class: provider.ClassRateLimit, RetryAfter: 500 * time.Millisecond}},
		{Name: "429 retry-after HTTP date", Tr: Transcript{Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Header: hdr("retry-after", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))},
			Want: Want{Class: provider.ClassRateLimit, RetryAfter: 30 * time.Second}},
		{Name: "429 in-band hint in the body", Tr: Transcript{Status: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached for requests. Please try again in 1.1s."},
			Want: Want{Class: provider.ClassRateLimit, RetryAfter: 1100 * time.Millisecond}},
		{Name: "429 insufficient quota", Tr: Transcript{Status: 429, Code: "insufficient_quota", Message: "You exceeded your current quota."}, Want: Want{Class: provider.ClassQuota}},
		{Name: "429 request too large", Tr: Transcript{Status: 429, Code: "rate_limit_exceeded", Message: "Request too large for gpt-4o on tokens per min."}, Want: Want{Class: provider.ClassTooLarge}},
		{Name: "402", Tr: Transcript{Status: 402, Code: "payment_required", Message: "Insufficient balance"}, Want: Want{Class: provider.ClassPayment}},
		{Name: "401", Tr: Transcript{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key"}, Want: Want{Class: provider.ClassAuth}},
		{Name: "400", Tr: Transcript{Status: 400, Code: "invalid_request_error", Message: "bad"}, Want: Want{Class: provider.ClassInvalidRequest}},
		{Name: "500", Tr: Transcript{Status: 500, Code: "server_error", Message: "oops", Header: hdr("x-request-id", "req_500")}, Want: Want{Class: provider.ClassServer, RequestID: "req_500"}},
		{Name: "529 overloaded", Tr: Transcript{Status: 529, Code: "overloaded_error", Message: "Overloaded", Header: hdr("request-id", "req_011CSHoE")},
			Want: Want{Class: provider.ClassServer, RequestID: "req_011CSHoE"}},
		{Name: "503", Tr: Transcript{Status: 503, Code: "overloaded", Message: "try later"}, Want: Want{Class: provider.ClassServer}},
	}
	return cases
}

func tooLarge(limit string) Want {
	return Want{Class: provider.ClassResponseTooLarge, Reason: limit}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}
