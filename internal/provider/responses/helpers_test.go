package responses

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/turnstream/turnstream/internal/provider/providertest"
)

// sseBytes answers every request with body as an event stream, verbatim.
func sseBytes(body []byte) http.HandlerFunc {
	return providertest.SSE(body, "X-Request-Id", "req_fixture")
}

// fixture reads testdata/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return providertest.Fixture(t, filepath.Join("testdata", name))
}

// fixtureFiles returns every .sse fixture's bytes by file name.
func fixtureFiles(t testing.TB) map[string][]byte {
	t.Helper()
	return providertest.Fixtures(t, filepath.Join("testdata", "*.sse"))
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
