package bus_test

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/calltoken"
	"github.com/turnstream/turnstream/internal/natstest"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestCallTokenKey: workers starting at once, each with its own
// connection, agree on one fleet key: the first create wins and the others
// read it. It is stored in the worker-only state bucket as 32 bytes of
// unpadded base64url; a stored value that is no key is an error, never
// replaced.
func TestCallTokenKey(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := (bus.Topology{}).Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	const workers = 8
	keys := make([]calltoken.Key, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			_, wjs := srv.JetStream()
			b, err := bus.New(ctx, wjs, wire.Subjects{})
			if err != nil {
				t.Error(err)
				return
			}
			st, err := b.State(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if keys[i], err = st.CallTokenKey(ctx); err != nil {
				t.Errorf("CallTokenKey() = %v", err)
			}
		})
	}
	wg.Wait()
	want := keys[0].Sign("s1", "t1", "call_1", "get_time")
	if want == "" {
		t.Fatal("worker 0 got the zero key")
	}
	for i, k := range keys {
		if got := k.Sign("s1", "t1", "call_1", "get_time"); got != want {
			t.Errorf("worker %d signs %q; worker 0 signs %q: want one fleet key", i, got, want)
		}
	}

	kv, err := js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, bus.CallTokenKeyKey)
	if err != nil {
		t.Fatalf("Get(%s) = %v", bus.CallTokenKeyKey, err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`).Match(e.Value()) || e.Revision() == 0 {
		t.Errorf("stored key = %d characters; want 32 bytes in unpadded base64url", len(e.Value()))
	}

	if _, err := kv.Put(ctx, bus.CallTokenKeyKey, []byte("not a key")); err != nil {
		t.Fatal(err)
	}
	b, err := bus.New(ctx, js, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CallTokenKey(ctx); !errors.Is(err, calltoken.ErrBadKey) {
		t.Errorf("CallTokenKey() over a stored value that is no key = %v; want calltoken.ErrBadKey", err)
	}
	if e, err := kv.Get(ctx, bus.CallTokenKeyKey); err != nil || string(e.Value()) != "not a key" {
		t.Errorf("stored value after the failed read = %q, %v; want it left alone", e.Value(), err)
	}
}
