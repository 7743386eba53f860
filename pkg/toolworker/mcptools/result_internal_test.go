package mcptools

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestResult(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want toolworker.Result
	}{
		{name: "empty", res: &mcp.CallToolResult{}, want: toolworker.Result{}},
		{
			name: "text blocks joined",
			res:  &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
			want: toolworker.Result{Content: "a\nb"},
		},
		{
			name: "isError",
			res:  &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}},
			want: toolworker.Result{Content: "no such file", IsError: true},
		},
		{
			name: "structured only",
			res:  &mcp.CallToolResult{StructuredContent: map[string]any{"b": 1, "a": "<&>"}},
			want: toolworker.Result{Content: `{"a":"<&>","b":1}`},
		},
		{
			name: "structured repeated as text, differently formatted",
			res: &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "{\n  \"b\": 1.0, \"a\": 2\n}"}},
				StructuredContent: map[string]any{"a": 2, "b": 1},
			},
			want: toolworker.Result{Content: "{\n  \"b\": 1.0, \"a\": 2\n}"},
		},
		{
			name: "structured beside other text",
			res: &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "2 matches"}},
				StructuredContent: []any{"x", "y"},
			},
			want: toolworker.Result{Content: "2 matches\n[\"x\",\"y\"]"},
		},
		{
			name: "non-text described",
			res: &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 10)},
				&mcp.AudioContent{Data: make([]byte, 4)},
				&mcp.ResourceLink{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.txt", Text: "bee"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2}}},
			}},
			want: toolworker.Result{Content: "[image: image/png, 10 bytes, not shown]\n" +
				"[audio: unknown type, 4 bytes, not shown]\n" +
				"[resource link: file:///a.txt (a), text/plain]\n" +
				"[resource file:///b.txt]\nbee\n" +
				"[resource file:///c.bin: application/octet-stream, 2 bytes, not shown]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := result(tt.res, 1<<20); got != tt.want {
				t.Errorf("result() = %+v; want %+v", got, tt.want)
			}
		})
	}
}

// TestResultBounded: a content past the limit is cut with the marker
// that reports the tool's full size, which toolworker keeps if it cuts
// again.
func TestResultBounded(t *testing.T) {
	long := strings.Repeat("x", 5000)
	got := result(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: long}}}, 2000)
	body, full, truncated := wire.SplitTruncated(got.Content)
	if len(got.Content) > 2000 || !truncated || full != 5000 || !strings.HasPrefix(long, body) {
		t.Errorf("result(5000 bytes, limit 2000) = %d bytes, full %d, truncated %v; want at most 2000, full 5000, truncated", len(got.Content), full, truncated)
	}
}
