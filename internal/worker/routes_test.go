package worker_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestNewAdapterBuildsEveryProvider: Options.NewAdapter builds each
// configured provider's adapter in place of its API's own, and no API key
// is read (a replay has none).
func TestNewAdapterBuildsEveryProvider(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	t.Setenv("TURNSTREAM_TEST_UNSET_KEY", "")
	e.cfg.Providers[0].APIKeyEnv = "TURNSTREAM_TEST_UNSET_KEY"
	if _, err := worker.New(ctxFor(t), worker.Options{Conn: e.srv.Connect(), Config: e.cfg}); err == nil || !strings.Contains(err.Error(), "TURNSTREAM_TEST_UNSET_KEY") {
		t.Fatalf("worker.New() without NewAdapter = %v; want the missing key", err)
	}
	var built []string
	e.startWorkerWith(func(o *worker.Options) {
		o.NewAdapter = func(p config.Provider) (provider.Adapter, error) {
			built = append(built, p.Name)
			return openaichat.New(openaichat.Options{BaseURL: e.http.URL + "/v1", HTTPClient: e.http.Client()})
		}
	})
	if !slices.Equal(built, []string{"mock"}) {
		t.Fatalf("NewAdapter built %v; want [mock]", built)
	}
	turn, err := e.client().Submit(ctxFor(t), wire.TurnRequest{SessionID: "hook", Input: []wire.InputMessage{{Role: wire.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatalf("Submit() = %v", err)
	}
	defer turn.Close()
	res, err := turn.Wait(ctxFor(t))
	if err != nil || res.Terminal.Type != wire.EventTurnCompleted {
		t.Fatalf("Wait() = %+v, %v; want %s", res, err, wire.EventTurnCompleted)
	}
	if n := len(e.mock.Requests()); n != 1 {
		t.Errorf("provider requests = %d; want 1, through the built adapter", n)
	}
}
