package responses

import (
	"bytes"
	"encoding/json"
)

// The tolerant shapes of what the Responses API sends. Fields whose type
// varies, or that only some events carry, are kept raw and read when used,
// so an unknown event or item of an unexpected shape is ignored rather than
// malformed.

// envelope is the part of every event read before its type is known.
type envelope struct {
	Type json.RawMessage `json:"type"`
}

// event is a known stream event.
type event struct {
	OutputIndex  *int            `json:"output_index"`
	ItemID       string          `json:"item_id"`
	SummaryIndex *int            `json:"summary_index"`
	Delta        string          `json:"delta"`
	Text         string          `json:"text"`
	Refusal      string          `json:"refusal"`
	Arguments    json.RawMessage `json:"arguments"`
	Name         string          `json:"name"`
	Item         json.RawMessage `json:"item"`
	Response     *response       `json:"response"`
	// Code, Message and Error carry an error event: code and message at the
	// top level, or nested in error.
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}

// response is a response object: in response.* events, and the body of a
// non-streaming answer.
type response struct {
	ID                string            `json:"id"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	Usage             json.RawMessage   `json:"usage"`
	Error             json.RawMessage   `json:"error"`
	IncompleteDetails json.RawMessage   `json:"incomplete_details"`
}

// item is an output item of a kind the adapter reads.
type item struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	// function_call
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// message (output_text, refusal) and reasoning (reasoning_text)
	Content []part `json:"content"`
	// reasoning
	Summary          []part  `json:"summary"`
	EncryptedContent *string `json:"encrypted_content"`
}

type part struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

type errorBody struct {
	Code    json.RawMessage `json:"code"`
	Type    string          `json:"type"`
	Message string          `json:"message"`
}

type usageBody struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// Output item types with a block.
const (
	itemMessage      = "message"
	itemFunctionCall = "function_call"
	itemReasoning    = "reasoning"
)

// sameJSON reports whether a and b are the same text, or the same JSON text
// but for insignificant whitespace.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, []byte(a)) == nil && json.Compact(&cb, []byte(b)) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}
