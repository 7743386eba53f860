package deepseek

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// traceID is the x-ds-trace-id every fixture server sends.
const traceID = "ds-trace-7f3a9c"

// sse answers with body as an event stream, verbatim, the way DeepSeek
// does: its request id only in x-ds-trace-id.
func sse(body []byte) http.HandlerFunc {
	return providertest.SSE(body, "Content-Type", "text/event-stream; charset=utf-8", "x-ds-trace-id", traceID)
}

// reply answers with a fixed status and JSON body, plus header pairs.
func reply(status int, body string, kv ...string) http.HandlerFunc {
	return providertest.Reply(status, "application/json", body, kv...)
}

// fixture reads testdata/streams/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return providertest.Fixture(t, filepath.Join("testdata", "streams", name))
}

func newAdapter(t testing.TB, baseURL string, o Options) *Adapter {
	t.Helper()
	o.BaseURL = baseURL
	if o.APIKey == "" {
		o.APIKey = "sk-test"
	}
	a, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", o, err)
	}
	return a
}
