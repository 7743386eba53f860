package anthropic

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// requestID is the request-id every fixture server sends, as Anthropic does.
const requestID = "req_011CSHoEeqs5C35K2UUqR7Fy"

// sse answers with body as an event stream, verbatim, with Anthropic's
// request-id header.
func sse(body []byte) http.HandlerFunc {
	return providertest.SSE(body, "request-id", requestID)
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
		o.APIKey = "sk-ant-test"
	}
	a, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v) error = %v", o, err)
	}
	return a
}
