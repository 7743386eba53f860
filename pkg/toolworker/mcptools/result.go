package mcptools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// ServerStoppedContent is the content of the error result of a call whose
// MCP server stopped (exited, or its connection failed) while the call was
// in flight. The call is not sent again: it may have taken effect.
const ServerStoppedContent = "error: tool outcome unknown: the MCP server serving this tool stopped during the call and is being restarted; the call may or may not have taken effect"

// UnreadableContent is the content of the error result of a call whose
// MCP server answered with a result that could not be read (not a valid
// tools/call result). The server ran the call: it is not sent again.
const UnreadableContent = "error: tool outcome unknown: the MCP server's answer to this call could not be read; the call may or may not have taken effect"

// NotSentContent is the content of the error result of a call that
// found its MCP server's connection closing each time it was to be sent:
// the call did not run.
const NotSentContent = "error: the MCP server serving this tool is restarting; the call was not run"

// result maps an MCP tool result to a turnstream one, its content at most
// limit bytes:
//   - text blocks, in order, joined by newlines;
//   - an embedded text resource as "[resource URI]" and its text;
//   - other blocks (images, audio, blobs, resource links) described in
//     brackets, never inlined: "[image: image/png, 5120 bytes, not shown]";
//   - structured content as compact JSON, after the blocks, unless a text
//     block already holds the same JSON (the spec has servers repeat it
//     as text, and the Go SDK does);
//   - isError as IsError.
//
// A longer content is cut with wire.TruncateContent's marker.
func result(res *mcp.CallToolResult, limit int) toolworker.Result {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, describe(c))
	}
	if res.StructuredContent != nil {
		if js, ok := compactJSON(res.StructuredContent); !ok {
			parts = append(parts, "[structured content that does not encode as JSON, not shown]")
		} else if !repeated(js, res.Content) {
			parts = append(parts, string(js))
		}
	}
	content, _, _ := wire.TruncateContent(strings.Join(parts, "\n"), limit)
	return toolworker.Result{Content: content, IsError: res.IsError}
}

// describe is one content block as the model reads it.
func describe(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.ResourceLink:
		s := "[resource link: " + c.URI
		if c.Name != "" {
			s += " (" + c.Name + ")"
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		return s + "]"
	case *mcp.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return "[resource: empty]"
		case len(r.Blob) > 0:
			return fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
		}
		return "[resource " + r.URI + "]\n" + r.Text
	}
	return fmt.Sprintf("[content of type %T, not shown]", c)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// compactJSON encodes v as JSON without HTML escaping and without a
// trailing newline.
func compactJSON(v any) ([]byte, bool) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// repeated reports whether a text block of content holds the JSON value
// js, in any formatting.
func repeated(js []byte, content []mcp.Content) bool {
	want, ok := canonical(js)
	if !ok {
		return false
	}
	for _, c := range content {
		t, isText := c.(*mcp.TextContent)
		// A text block far longer than js cannot hold the same value in
		// reasonable formatting: not decoded.
		if !isText || len(t.Text) > 4*len(js)+1024 {
			continue
		}
		if got, ok := canonical([]byte(t.Text)); ok && bytes.Equal(got, want) {
			return true
		}
	}
	return false
}

// canonical re-encodes a JSON text with sorted keys and no spacing.
func canonical(text []byte) ([]byte, bool) {
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return nil, false
	}
	return compactJSON(v)
}
