package directget_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/turnstream/turnstream/internal/directget"
	"github.com/turnstream/turnstream/internal/natstest"
)

// stream makes a stream LOG on log.> that answers direct gets.
func stream(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "LOG", Subjects: []string{"log.>"}, AllowDirect: true, Storage: jetstream.MemoryStorage,
	}); err != nil {
		t.Fatal(err)
	}
}

func publish(t testing.TB, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	for i := range n {
		if _, err := js.Publish(context.Background(), subject, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads filter from the start, batch by batch, as the bus does.
func readAll(t testing.TB, g *directget.Getter, filter string) (seqs []uint64, batches int) {
	t.Helper()
	var after uint64
	for {
		batches++
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		caughtUp, err := g.Batch(ctx, "LOG", filter, after, func(m *jetstream.RawStreamMsg) bool {
			if m.Sequence <= after {
				return false
			}
			seqs, after = append(seqs, m.Sequence), m.Sequence
			return true
		})
		cancel()
		if err != nil {
			t.Fatalf("batch %d after %d: %v", batches, after, err)
		}
		if caughtUp {
			return seqs, batches
		}
		if batches > 100 {
			t.Fatal("no end to the batches")
		}
	}
}

func TestBatchReadsAFilterInBatches(t *testing.T) {
	nc, js := natstest.Start(t).JetStream()
	stream(t, js)
	// 300 records on log.a, interleaved with others on log.b.
	for range 30 {
		publish(t, js, "log.a", 10)
		publish(t, js, "log.b", 3)
	}
	g := directget.New(js)
	subs := nc.NumSubscriptions() // the publishes' reply subscription
	seqs, batches := readAll(t, g, "log.a")
	if len(seqs) != 300 || batches != 2 {
		t.Fatalf("read %d records of log.a in %d batches, want 300 in 2 (256 a batch)", len(seqs), batches)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("records out of order: %d after %d", seqs[i], seqs[i-1])
		}
	}
	// Nothing stored after the last: caught up, nothing taken.
	caughtUp, err := g.Batch(context.Background(), "LOG", "log.a", seqs[len(seqs)-1], func(*jetstream.RawStreamMsg) bool {
		t.Error("a record after the last")
		return true
	})
	if err != nil || !caughtUp {
		t.Fatalf("after the last: caught up %v, %v; want caught up", caughtUp, err)
	}
	// A wildcard filter reads both subjects.
	if all, _ := readAll(t, g, "log.>"); len(all) != 390 {
		t.Fatalf("log.>: %d records, want 390", len(all))
	}
	// However many batches, the connection holds one subscription for them.
	if n := nc.NumSubscriptions() - subs; n != 1 {
		t.Fatalf("%d subscriptions made for the batches, want 1", n)
	}
}

// TestBatchesInFlightAreKeptApart reads many filters at once on one
// Getter: each batch gets its own records only.
func TestBatchesInFlightAreKeptApart(t *testing.T) {
	_, js := natstest.Start(t).JetStream()
	stream(t, js)
	const filters = 24
	for i := range filters {
		publish(t, js, fmt.Sprintf("log.s%d", i), i+1)
	}
	g := directget.New(js)
	var wg sync.WaitGroup
	errs := make(chan error, filters)
	for i := range filters {
		wg.Go(func() {
			for range 20 {
				n := 0
				subject := fmt.Sprintf("log.s%d", i)
				_, err := g.Batch(context.Background(), "LOG", subject, 0, func(m *jetstream.RawStreamMsg) bool {
					if m.Subject != subject {
						errs <- fmt.Errorf("%s got a record of %s", subject, m.Subject)
					}
					n++
					return true
				})
				if err == nil && n != i+1 {
					err = fmt.Errorf("%s: %d records, want %d", subject, n, i+1)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// fake serves DIRECT.GET.FAKE with answer, in place of a stream: a
// misbehaving or lossy server.
func fake(t *testing.T, nc *nats.Conn, answer func(m *nats.Msg)) {
	t.Helper()
	sub, err := nc.Subscribe("$JS.API.DIRECT.GET.FAKE", answer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() }) //nolint:errcheck // test cleanup
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// rec is a batch record as the server shapes it.
func rec(reply string, seq, last, pending uint64) *nats.Msg {
	return &nats.Msg{Subject: reply, Data: []byte("x"), Header: nats.Header{
		"Nats-Stream": {"FAKE"}, "Nats-Subject": {"log.a"}, "Nats-Sequence": {strconv.FormatUint(seq, 10)},
		"Nats-Time-Stamp":  {time.Now().UTC().Format(time.RFC3339Nano)},
		"Nats-Num-Pending": {strconv.FormatUint(pending, 10)}, "Nats-Last-Sequence": {strconv.FormatUint(last, 10)},
	}}
}

func eob(reply string, last, pending uint64) *nats.Msg {
	m := nats.NewMsg(reply)
	m.Header.Set("Status", "204")
	m.Header.Set("Description", "EOB")
	m.Header.Set("Nats-Num-Pending", strconv.FormatUint(pending, 10))
	m.Header.Set("Nats-Last-Sequence", strconv.FormatUint(last, 10))
	return m
}

func batch(g *directget.Getter, timeout time.Duration) (n int, caughtUp bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	caughtUp, err = g.Batch(ctx, "FAKE", "log.a", 0, func(*jetstream.RawStreamMsg) bool { n++; return true })
	return n, caughtUp, err
}

// TestBatchWithARecordMissing: a batch whose records do not chain (one
// dropped on the way, in the middle or at the end) is refused, not taken
// as complete.
func TestBatchWithARecordMissing(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	answer := srv.Connect()
	fake(t, answer, func(m *nats.Msg) {
		answer.PublishMsg(rec(m.Reply, 5, 0, 2)) //nolint:errcheck // the test sees what came
		answer.PublishMsg(rec(m.Reply, 9, 7, 0)) //nolint:errcheck // 7 never came
		answer.PublishMsg(eob(m.Reply, 9, 0))    //nolint:errcheck
	})
	if n, _, err := batch(directget.New(js), 5*time.Second); !errors.Is(err, directget.ErrGap) {
		t.Fatalf("a batch missing a record: %d taken, %v; want ErrGap", n, err)
	}
}

func TestBatchWithItsLastRecordsMissing(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	answer := srv.Connect()
	fake(t, answer, func(m *nats.Msg) {
		answer.PublishMsg(rec(m.Reply, 5, 0, 1)) //nolint:errcheck
		answer.PublishMsg(eob(m.Reply, 6, 0))    //nolint:errcheck // 6 never came
	})
	if _, _, err := batch(directget.New(js), 5*time.Second); !errors.Is(err, directget.ErrGap) {
		t.Fatalf("a batch missing its last record: %v; want ErrGap", err)
	}
}

// TestBatchFlood: a responder that answers one request without end is
// cut off after a batch's worth, with an error.
func TestBatchFlood(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	answer := srv.Connect()
	fake(t, answer, func(m *nats.Msg) {
		for i := range uint64(directget.MaxRecords + 100) {
			answer.PublishMsg(rec(m.Reply, i+1, i, 1000)) //nolint:errcheck
		}
	})
	n, _, err := batch(directget.New(js), 5*time.Second)
	if err == nil || n != 0 {
		t.Fatalf("a flood: %d taken, %v; want an error and nothing taken", n, err)
	}
}

// TestBatchWithoutEnd: records with no end of batch are not taken as a
// batch; the caller's deadline ends the wait.
func TestBatchWithoutEnd(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	answer := srv.Connect()
	fake(t, answer, func(m *nats.Msg) {
		answer.PublishMsg(rec(m.Reply, 1, 0, 0)) //nolint:errcheck // and no end
	})
	n, _, err := batch(directget.New(js), 200*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || n != 0 {
		t.Fatalf("no end of batch: %d taken, %v; want the deadline and nothing taken", n, err)
	}
}

// TestLateAnswerIsDropped: the answers to a batch its caller gave up on
// come to no later batch.
func TestLateAnswerIsDropped(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.JetStream()
	answer := srv.Connect()
	var mu sync.Mutex
	var held []string
	fake(t, answer, func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if len(held) == 0 {
			held = append(held, m.Reply) // answered with the second
			return
		}
		for _, r := range append(held, m.Reply) {
			answer.PublishMsg(rec(r, 1, 0, 0)) //nolint:errcheck
			answer.PublishMsg(eob(r, 1, 0))    //nolint:errcheck
		}
	})
	g := directget.New(js)
	if _, _, err := batch(g, 100*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered batch: %v; want the deadline", err)
	}
	n, caughtUp, err := batch(g, 5*time.Second)
	if err != nil || n != 1 || !caughtUp {
		t.Fatalf("the next batch: %d taken, caught up %v, %v; want its one record", n, caughtUp, err)
	}
}

// TestNoResponders: a stream nobody serves fails at once.
func TestNoResponders(t *testing.T) {
	_, js := natstest.Start(t).JetStream()
	if _, _, err := batch(directget.New(js), 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("no stream: %v; want ErrNoResponders", err)
	}
}

// BenchmarkBatch reads a 20-record batch: with a Getter, and with
// jetstreamext's GetBatch (a subscription per request), side by side.
//
//	go test ./internal/directget -run '^$' -bench Batch -benchmem
func BenchmarkBatch(b *testing.B) {
	_, js := natstest.Start(b).JetStream()
	stream(b, js)
	publish(b, js, "log.a", 20)
	ctx := context.Background()
	b.Run("getter", func(b *testing.B) {
		g := directget.New(js)
		for b.Loop() {
			n := 0
			if _, err := g.Batch(ctx, "LOG", "log.a", 0, func(*jetstream.RawStreamMsg) bool { n++; return true }); err != nil || n != 20 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("jetstreamext", func(b *testing.B) {
		for b.Loop() {
			msgs, err := jetstreamext.GetBatch(ctx, js, "LOG", directget.MaxRecords, jetstreamext.GetBatchSeq(1),
				jetstreamext.GetBatchSubject("log.a"), jetstreamext.GetBatchMaxBytes(directget.MaxBytes))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, err := range msgs {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 20 {
				b.Fatal(n)
			}
		}
	})
}

func TestLast(t *testing.T) {
	_, js := natstest.Start(t).JetStream()
	stream(t, js)
	publish(t, js, "log.a", 3)
	publish(t, js, "log.b", 2)
	g := directget.New(js)
	for subject, want := range map[string]uint64{"log.a": 3, "log.b": 5, "log.none": 0} {
		if got, err := g.Last(context.Background(), "LOG", subject); err != nil || got != want {
			t.Errorf("Last(%s) = %d, %v; want %d", subject, got, err, want)
		}
	}
	if _, err := g.Last(context.Background(), "NONE", "log.a"); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("Last on no stream = %v; want ErrNoResponders", err)
	}
}
