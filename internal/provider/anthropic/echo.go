package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// The echo (assemble.Response.Echo, provider.Message.Reasoning when it
// comes back) is an answer's replay state: a JSON array of its thinking
// blocks that carry a signature and of its redacted_thinking blocks, in
// the answer's order, each exactly as the Messages API takes it back:
//
//	[{"signature":"EqQB...","thinking":"The user wants...","type":"thinking"},
//	 {"data":"EmwKAhgB...","type":"redacted_thinking"}]
//
// A thinking block without a signature is not replayable and is left
// out; an answer with neither kind has the empty echo. Prepare sends the
// blocks first in the assistant message they belong to. It is sensitive
// provider state, opaque to everything but this package, and replayed only
// to the provider and model that produced it (API.Replay.EchoSameModel).

// echoBlock is one block of an echo.
type echoBlock struct {
	Type      string  `json:"type"`
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`
}

// encodeEcho is blocks as an echo, "" for none. Thinking and signature of
// a thinking block, data of a redacted one, are what it carries.
func encodeEcho(blocks []echoBlock) string {
	if len(blocks) == 0 {
		return ""
	}
	params := make([]sdk.ContentBlockParamUnion, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == blockRedacted {
			params = append(params, sdk.NewRedactedThinkingBlock(b.Data))
			continue
		}
		params = append(params, sdk.NewThinkingBlock(b.Signature, deref(b.Thinking)))
	}
	out, err := json.Marshal(params)
	if err != nil {
		return "" // strings only: cannot fail
	}
	return string(out)
}

// decodeEcho reads an echo back as content blocks; ok is false for
// anything that is not one (another adapter's reasoning, a plain string,
// a block of another type or without its signature or data), which is
// foreign and never sent.
func decodeEcho(s string) (blocks []sdk.ContentBlockParamUnion, ok bool) {
	var raw []echoBlock
	if err := json.Unmarshal([]byte(s), &raw); err != nil || len(raw) == 0 {
		return nil, false
	}
	for _, b := range raw {
		switch {
		case b.Type == blockThinking && b.Thinking != nil && b.Signature != "" && b.Data == "":
			blocks = append(blocks, sdk.NewThinkingBlock(b.Signature, *b.Thinking))
		case b.Type == blockRedacted && b.Data != "" && b.Thinking == nil && b.Signature == "":
			blocks = append(blocks, sdk.NewRedactedThinkingBlock(b.Data))
		default:
			return nil, false
		}
	}
	return blocks, true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
