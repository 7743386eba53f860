package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/internal/bus"
)

// TestStoredCancels: a stored cancel is found until it is forgotten;
// storing it again writes nothing; the key goes with the last cancel it
// holds; a session keeps at most bus.MaxStoredCancels, the newest.
func TestStoredCancels(t *testing.T) {
	js, _, st := leaseEnv(t)
	ctx := t.Context()
	cancelled := func(session, turn string) bool {
		t.Helper()
		ok, err := st.Cancelled(ctx, session, turn)
		if err != nil {
			t.Fatalf("Cancelled(%s, %s) = %v", session, turn, err)
		}
		return ok
	}
	if cancelled("s1", "t1") {
		t.Fatal("Cancelled(s1, t1) before any store = true; want false")
	}
	for range 2 {
		if err := st.StoreCancel(ctx, "s1", "t1"); err != nil {
			t.Fatalf("StoreCancel(s1, t1) = %v", err)
		}
	}
	if !cancelled("s1", "t1") || cancelled("s1", "t2") || cancelled("s2", "t1") {
		t.Errorf("after StoreCancel(s1, t1): want only s1/t1 cancelled")
	}
	kv, err := js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, bus.CancelKey("s1")); err != nil || e.Revision() == 0 {
		t.Fatalf("Get(%s) = %v; want the stored cancels", bus.CancelKey("s1"), err)
	} else if h, _ := kv.History(ctx, bus.CancelKey("s1")); len(h) != 1 {
		t.Errorf("the same cancel stored twice wrote %d values; want 1", len(h))
	}
	if err := st.ForgetCancel(ctx, "s1", "t1"); err != nil {
		t.Fatalf("ForgetCancel(s1, t1) = %v", err)
	}
	if cancelled("s1", "t1") {
		t.Error("Cancelled(s1, t1) after ForgetCancel = true; want false")
	}
	if _, err := kv.Get(ctx, bus.CancelKey("s1")); err == nil {
		t.Errorf("%s after its last cancel was forgotten: still there; want deleted", bus.CancelKey("s1"))
	}
	if err := st.ForgetCancel(ctx, "s1", "t1"); err != nil {
		t.Errorf("ForgetCancel of a cancel not stored = %v; want nil", err)
	}

	for i := range bus.MaxStoredCancels + 2 {
		if err := st.StoreCancel(ctx, "s3", fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if cancelled("s3", "t0") || cancelled("s3", "t1") || !cancelled("s3", "t2") || !cancelled("s3", fmt.Sprintf("t%d", bus.MaxStoredCancels+1)) {
		t.Errorf("after %d cancels: want the %d newest kept", bus.MaxStoredCancels+2, bus.MaxStoredCancels)
	}
}

// TestStoredCancelsRace: workers storing cancels of one session at once
// (racing on its key) lose none of them.
func TestStoredCancelsRace(t *testing.T) {
	_, _, st := leaseEnv(t)
	ctx := t.Context()
	const workers, turns = 4, 6
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range turns {
				if err := st.StoreCancel(ctx, "s1", fmt.Sprintf("t%d", i)); err != nil {
					t.Errorf("StoreCancel(s1, t%d) = %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range turns {
		if ok, err := st.Cancelled(ctx, "s1", fmt.Sprintf("t%d", i)); err != nil || !ok {
			t.Errorf("Cancelled(s1, t%d) = %v, %v; want true", i, ok, err)
		}
	}
}

// TestStoredCancelsTokens: ids that are no subject tokens name no key.
func TestStoredCancelsTokens(t *testing.T) {
	_, _, st := leaseEnv(t)
	ctx := context.Background()
	for _, ids := range [][2]string{{"s1", ""}, {"s1", "t.1"}, {"s*", "t1"}, {"", "t1"}, {"s1", "t>"}} {
		if err := st.StoreCancel(ctx, ids[0], ids[1]); err == nil {
			t.Errorf("StoreCancel(%q, %q) = nil; want an error", ids[0], ids[1])
		}
		if _, err := st.Cancelled(ctx, ids[0], ids[1]); err == nil {
			t.Errorf("Cancelled(%q, %q) = nil error; want one", ids[0], ids[1])
		}
	}
}
