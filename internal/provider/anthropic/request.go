package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaiwire"
	"github.com/turnstream/turnstream/pkg/wire"
)

// joiner separates joined system prompts.
const joiner = "\n\n"

// Prepare serializes req as a streaming Messages request for model, with
// the SDK's request types:
//   - call ids remapped to CallIDFormat on both sides of every pair;
//   - the system prompt and every system-role message, in order, joined
//     in system;
//   - messages alternating user and assistant: consecutive messages of one
//     side are one message; a user message holds its text, then its images
//     (an http(s) URL, or a base64 data URI of JPEG, PNG, GIF or WebP);
//     tool results (role tool, or role user with a tool-call id) are
//     tool_result blocks (tool_use_id, content, is_error), every result
//     of a step in the one user message that follows its calls, before any
//     text there;
//   - an assistant message holds the blocks of its echo first (its
//     Reasoning, when it is one: see Echo; anything else is foreign
//     reasoning and is dropped), then its text, then a tool_use block per
//     call (input: the arguments, a JSON object, {} when empty); an
//     assistant message with none of them sends nothing;
//   - tools with their parameters as input_schema; max_tokens from the
//     adapter's options, and extended thinking when it has a budget;
//     stream true.
//
// The same req and model always give the same bytes.
func (a *Adapter) Prepare(req *provider.Request, model provider.Model) ([]byte, error) {
	req = provider.RemapCallIDs(req, CallIDFormat)
	system := nonEmpty(nil, req.System)
	var c conversation
	for i := range req.Messages {
		m := &req.Messages[i]
		if len(m.Images) > 0 && m.Role != wire.RoleUser {
			return nil, invalid("images on a non-user message", ErrImageRole)
		}
		switch {
		case m.Role == wire.RoleSystem:
			system = nonEmpty(system, m.Content)
		case m.Role == wire.RoleTool, m.Role == wire.RoleUser && m.ToolCallID != "":
			c.user().results = append(c.user().results, toolResult(m))
		case m.Role == wire.RoleUser:
			blocks, err := userBlocks(m)
			if err != nil {
				return nil, err
			}
			c.user().other = append(c.user().other, blocks...)
		case m.Role == wire.RoleAssistant:
			if err := c.assistant(m); err != nil {
				return nil, err
			}
		default:
			return nil, invalid("unknown message role", ErrRole)
		}
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(model.Name),
		MaxTokens: a.maxTokens,
		Messages:  c.params(),
	}
	if len(system) > 0 {
		params.System = []sdk.TextBlockParam{{Text: strings.Join(system, joiner)}}
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return nil, err
		}
		params.Tools = append(params.Tools, tool)
	}
	if a.thinking > 0 {
		params.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: a.thinking}}
	}
	params.SetExtraFields(map[string]any{"stream": true})
	b, err := json.Marshal(params)
	if err != nil {
		return nil, invalid("request not serializable", fmt.Errorf("anthropic: %w", err))
	}
	return b, nil
}

func invalid(reason string, err error) *provider.Failure {
	return provider.Fail(provider.ClassInvalidRequest, reason, err)
}

// turn is one wire message being built: consecutive provider messages of
// one side. A user turn sends its tool results before anything else; an
// assistant turn its echo blocks, then its text, then its calls.
type turn struct {
	role                 wire.Role
	results, other       []sdk.ContentBlockParamUnion // user
	echo, text, toolUses []sdk.ContentBlockParamUnion // assistant
}

// conversation is the wire messages, alternating sides.
type conversation struct{ turns []*turn }

// at returns the last turn if it is role's, else a new one.
func (c *conversation) at(role wire.Role) *turn {
	if n := len(c.turns); n > 0 && c.turns[n-1].role == role {
		return c.turns[n-1]
	}
	t := &turn{role: role}
	c.turns = append(c.turns, t)
	return t
}

func (c *conversation) user() *turn { return c.at(wire.RoleUser) }

// assistant adds m's blocks to the assistant turn; a message with none
// adds nothing, not even a turn.
func (c *conversation) assistant(m *provider.Message) error {
	var echo []sdk.ContentBlockParamUnion
	if m.Reasoning != nil {
		echo, _ = decodeEcho(*m.Reasoning) // foreign reasoning is dropped
	}
	uses := make([]sdk.ContentBlockParamUnion, 0, len(m.ToolCalls))
	for _, call := range m.ToolCalls {
		args := strings.TrimSpace(call.Arguments)
		if args == "" {
			args = "{}"
		}
		if !isObject([]byte(args)) {
			return invalid("tool call arguments not an object", ErrArguments)
		}
		uses = append(uses, sdk.NewToolUseBlock(call.ID, json.RawMessage(args), call.Name))
	}
	if len(echo) == 0 && m.Content == "" && len(uses) == 0 {
		return nil
	}
	t := c.at(wire.RoleAssistant)
	t.echo = append(t.echo, echo...)
	if m.Content != "" {
		t.text = append(t.text, sdk.NewTextBlock(m.Content))
	}
	t.toolUses = append(t.toolUses, uses...)
	return nil
}

// params is the conversation on the wire; a user turn with no block (an
// empty message) is left out.
func (c *conversation) params() []sdk.MessageParam {
	out := make([]sdk.MessageParam, 0, len(c.turns))
	for _, t := range c.turns {
		if t.role == wire.RoleAssistant {
			out = append(out, sdk.NewAssistantMessage(concat(t.echo, t.text, t.toolUses)...))
			continue
		}
		if blocks := concat(t.results, t.other); len(blocks) > 0 {
			out = append(out, sdk.NewUserMessage(blocks...))
		}
	}
	return out
}

func concat(parts ...[]sdk.ContentBlockParamUnion) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// toolResult is a tool message as a tool_result block: its content as one
// text block (none when empty: Messages refuses empty text blocks), and
// is_error only when set.
func toolResult(m *provider.Message) sdk.ContentBlockParamUnion {
	r := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if m.Content != "" {
		r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
	}
	if m.IsError {
		r.IsError = param.NewOpt(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: r}
}

// userBlocks is a user message's text (none when empty) and images.
func userBlocks(m *provider.Message) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	if m.Content != "" {
		out = append(out, sdk.NewTextBlock(m.Content))
	}
	for _, img := range m.Images {
		b, err := imageBlock(img)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// imageMediaTypes are the base64 image types Messages takes.
var imageMediaTypes = map[string]sdk.Base64ImageSourceMediaType{
	"image/jpeg": sdk.Base64ImageSourceMediaTypeImageJPEG,
	"image/png":  sdk.Base64ImageSourceMediaTypeImagePNG,
	"image/gif":  sdk.Base64ImageSourceMediaTypeImageGIF,
	"image/webp": sdk.Base64ImageSourceMediaTypeImageWebP,
}

// imageBlock is an image URL or data URI as an image block.
func imageBlock(img string) (sdk.ContentBlockParamUnion, error) {
	if strings.HasPrefix(img, "https://") || strings.HasPrefix(img, "http://") {
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: img}), nil
	}
	meta, data, ok := strings.Cut(strings.TrimPrefix(img, "data:"), ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	mt, known := imageMediaTypes[strings.ToLower(mediaType)]
	if !strings.HasPrefix(img, "data:") || !ok || !isBase64 || !known || data == "" {
		return sdk.ContentBlockParamUnion{}, invalid("unsupported image", ErrImageSource)
	}
	return sdk.NewImageBlock(sdk.Base64ImageSourceParam{Data: data, MediaType: mt}), nil
}

// toolParam is a tool with its parameters as input_schema: the schema as
// given (keys sorted, so the bytes are stable), the empty object schema
// when it has none.
func toolParam(t wire.Tool) (sdk.ToolUnionParam, error) {
	schema, err := json.Marshal(openaiwire.ToolParameters(t.Parameters))
	if err != nil {
		return sdk.ToolUnionParam{}, invalid("tool schema not serializable", fmt.Errorf("anthropic: %w", err))
	}
	tool := &sdk.ToolParam{Name: t.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema))}
	if t.Description != "" {
		tool.Description = param.NewOpt(t.Description)
	}
	return sdk.ToolUnionParam{OfTool: tool}, nil
}

// nonEmpty appends s to parts unless it is empty.
func nonEmpty(parts []string, s string) []string {
	if s == "" {
		return parts
	}
	return append(parts, s)
}
