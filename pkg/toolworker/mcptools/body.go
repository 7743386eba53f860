package mcptools

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResponseBytes bounds the body of a URL server's JSON response, which
// the SDK reads whole: the bound the SDK puts on one stdio frame and on
// one server-sent event.
const maxResponseBytes = mcp.DefaultMaxLineLength

// errResponseTooLarge is a JSON response past maxResponseBytes: the
// connection fails, as a stdio frame past the SDK's bound fails it.
var errResponseTooLarge = errors.New("mcptools: the MCP server's response is too large")

// boundedTransport bounds the body of every response but an event stream
// (the SDK bounds each of its events, and its length is the call's
// deadline's).
type boundedTransport struct{ rt *http.Transport }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxResponseBytes}
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport, for
// http.Client.CloseIdleConnections.
func (t boundedTransport) CloseIdleConnections() { t.rt.CloseIdleConnections() }

// boundedBody fails a read past left bytes with errResponseTooLarge.
type boundedBody struct {
	io.ReadCloser
	left int
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errResponseTooLarge
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}
