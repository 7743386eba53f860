package openaichat

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// sseBytes answers every request with body as an event stream, verbatim.
func sseBytes(body []byte) http.HandlerFunc {
	return providertest.SSE(body, "X-Request-Id", "req_fixture")
}

// fixtureFiles returns every testdata/*.sse fixture's bytes by name,
// without the .sse.
func fixtureFiles(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, b := range providertest.Fixtures(t, filepath.Join("testdata", "*.sse")) {
		out[strings.TrimSuffix(name, ".sse")] = b
	}
	return out
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
