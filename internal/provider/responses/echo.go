package responses

import (
	"encoding/json"
)

// EchoName names the Responses API's replay echo: the encrypted reasoning
// items of an answer, sent back before its function calls when the
// answer's tool group is replayed to a stateless request of the same
// provider.
const EchoName = "encrypted_reasoning"

// includeEncrypted asks a stateless request for its reasoning items'
// encrypted_content, the only form a provider that keeps nothing takes
// back.
const includeEncrypted = "reasoning.encrypted_content"

// reasoningInput is a reasoning item as the echo keeps it and as a request
// sends it back.
type reasoningInput struct {
	Type             string `json:"type"` // reasoning
	ID               string `json:"id,omitempty"`
	EncryptedContent string `json:"encrypted_content"`
	Summary          []any  `json:"summary"`
}

// encodeEcho is the echo of an answer's encrypted reasoning, "" when it
// had none.
func encodeEcho(items []ReasoningItem) string {
	if len(items) == 0 {
		return ""
	}
	out := make([]reasoningInput, 0, len(items))
	for _, r := range items {
		out = append(out, reasoningInput{Type: "reasoning", ID: r.ID, EncryptedContent: r.EncryptedContent, Summary: []any{}})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeEcho reads an echo back as input items. An echo that is not this
// adapter's (empty, or not a list of reasoning items with encrypted
// content) yields none: the request is still right without it, only the
// model's earlier reasoning is not carried.
func decodeEcho(echo *string) []any {
	if echo == nil || *echo == "" {
		return nil
	}
	var items []reasoningInput
	if err := json.Unmarshal([]byte(*echo), &items); err != nil {
		return nil
	}
	out := make([]any, 0, len(items))
	for _, it := range items {
		if it.Type != "reasoning" || it.EncryptedContent == "" {
			return nil
		}
		if it.Summary == nil {
			it.Summary = []any{}
		}
		out = append(out, it)
	}
	return out
}
