package bus_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestTakeRacingReleaseIsNotFenced: the next turn's take racing the
// previous turn's Release (which comes after the ack, when the next turn
// is already the session's first) is not taken for a newer take: it
// succeeds, instead of leaving the request until its ack wait.
func TestTakeRacingReleaseIsNotFenced(t *testing.T) {
	_, b, st := leaseEnv(t)
	ctx := t.Context()
	spurious := 0
	for i := 0; i < 200; i++ {
		session := "r" + string(rune('a'+i%26)) + wire.Subjects{}.Prefix + itoa(i)
		l1, err := b.TakeLease(ctx, st, session, "t1", 1, "w1")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var takeErr error
		wg.Add(2)
		go func() { defer wg.Done(); _ = l1.Release(ctx) }()
		go func() { defer wg.Done(); _, takeErr = b.TakeLease(ctx, st, session, "t2", 2, "w2") }()
		wg.Wait()
		if errors.Is(takeErr, bus.ErrFenced) {
			spurious++
		} else if takeErr != nil {
			t.Fatal(takeErr)
		}
	}
	if spurious > 0 {
		t.Errorf("%d of 200 takes of the next turn failed with ErrFenced only because the previous holder released concurrently", spurious)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestLostLeaseKeyKeepsEpochsAboveMarkers: a lease key that disappears
// (an operator's kv del or purge, the bucket's TTL) while the markers keep
// their epochs does not make every take fail until the epochs count back
// up: the first take carries its epoch above the markers'.
func TestLostLeaseKeyKeepsEpochsAboveMarkers(t *testing.T) {
	js, b, st := leaseEnv(t)
	ctx := t.Context()
	for i := 0; i < 5; i++ {
		l, err := b.TakeLease(ctx, st, "s9", "t", uint64(i+1), "w")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, bus.LeaseKey("s9")); err != nil {
		t.Fatal(err)
	}
	fails := 0
	for i := 0; i < 10; i++ {
		_, err := b.TakeLease(ctx, st, "s9", "t6", 6, "w")
		if err == nil {
			break
		}
		if !errors.Is(err, bus.ErrFenced) {
			t.Fatal(err)
		}
		fails++
	}
	if fails > 0 {
		t.Errorf("after the lease key was lost, %d takes failed with ErrFenced before one succeeded", fails)
	}
	_ = jetstream.ErrKeyNotFound
	_ = context.Background
}
