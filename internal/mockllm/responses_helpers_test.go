package mockllm_test

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/responses"
)

// responsesAccumulated is a Responses stream as the official SDK sees it.
type responsesAccumulated struct {
	snapshot  responses.ResponseAccumulatorSnapshot
	final     *responses.Response // nil without a terminal event
	reasoning string
	terminal  string
}

// accumulateResponses checks every event's framing (an event line equal to
// the data's type, sequence numbers from 0 without gaps), decodes each as
// an openai-go ResponseStreamEventUnion, and feeds it to the SDK's response
// accumulator.
func accumulateResponses(t *testing.T, events []event) responsesAccumulated {
	t.Helper()
	var acc responses.ResponseAccumulator
	var out responsesAccumulated
	for i, ev := range events {
		var typed responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(ev.data), &typed); err != nil {
			t.Fatalf("event %d is not a Responses stream event: %v\n%s", i, err, ev.data)
		}
		if typed.Type == "" || ev.name != typed.Type {
			t.Errorf("event %d: event line %q, data type %q; want both equal and set", i, ev.name, typed.Type)
		}
		if typed.SequenceNumber != int64(i) {
			t.Errorf("event %d sequence_number = %d; want %d", i, typed.SequenceNumber, i)
		}
		if out.terminal != "" {
			t.Errorf("event %d (%s) after the terminal %s", i, typed.Type, out.terminal)
		}
		switch typed.Type {
		case "response.reasoning_summary_text.delta":
			out.reasoning += typed.Delta
		case "response.completed", "response.incomplete", "response.failed", "error":
			out.terminal = typed.Type
		}
		var server responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.data), &server); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if err := acc.AddEvent(server); err != nil && typed.Type != "error" {
			t.Fatalf("the SDK accumulator rejected event %d: %v\n%s", i, err, ev.data)
		}
	}
	out.snapshot = acc.Snapshot()
	if out.terminal != "" && out.terminal != "error" {
		r, err := acc.ReconstructedResponse()
		if err != nil {
			t.Fatalf("ReconstructedResponse() error = %v", err)
		}
		out.final = r
	}
	return out
}

// functionCalls returns the function_call items of a response.
func functionCalls(r *responses.Response) []responses.ResponseFunctionToolCall {
	var out []responses.ResponseFunctionToolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			out = append(out, it.AsFunctionCall())
		}
	}
	return out
}
