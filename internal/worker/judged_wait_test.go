package worker_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
)

// TestJudgedElsewhereAfterAWait: the same, on the path where the delivery
// first waits for its session's earlier turn: the guard's verdict is kept
// across the wait and asked by the take after it, so a delivery whose
// request another delivery judged leaves it instead of running the turn.
func TestJudgedElsewhereAfterAWait(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	ctx := ctxFor(t)
	inDecode1 := make(chan struct{})
	release0, release1 := make(chan struct{}), make(chan struct{})
	var once0, once1 sync.Once
	worker.SetDecodeHook(func(data []byte) {
		switch {
		case bytes.Contains(data, []byte("HOLD-ZERO")):
			once0.Do(func() { <-release0 })
		case bytes.Contains(data, []byte("HOLD-ONE")):
			once1.Do(func() { close(inDecode1); <-release1 })
		}
	})
	t.Cleanup(func() { worker.SetDecodeHook(nil) })
	logs := &syncBuffer{}
	e.startWorkerWith(func(o *worker.Options) { o.Log = zerolog.New(logs).Level(zerolog.InfoLevel) })

	pub := func(turn, content string) uint64 {
		ack, err := e.js.Publish(ctx, "turn.submit.jw", []byte(`{"session_id":"jw","turn_id":"`+turn+`","input":[{"role":"user","content":"`+content+`"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	pub("t0", "HOLD-ZERO")
	seq1 := pub("t1", "HOLD-ONE")
	select {
	case <-inDecode1:
	case <-time.After(wait):
		t.Fatal("t1 was never decoded")
	}
	// Another delivery of t1 judged it meanwhile: it moved the guard (and,
	// having decoded it, released it), as intake does.
	kv, err := e.js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := "=intake." + strconv.FormatUint(seq1, 10)
	g, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kv.Update(ctx, key, []byte(`{"owner":"other","delivery":2,"isolated":true}`), g.Revision())
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	close(release1) // t1's delivery waits for t0 (parked)
	close(release0) // t0 runs and ends; t1's delivery wakes
	var outcome string
	eventually(t, "t1's first delivery leaves or settles", func() bool {
		if strings.Contains(logs.String(), "another delivery judged this request") {
			outcome = "judged_elsewhere"
		}
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var l struct {
				Seq      uint64 `json:"stream_seq"`
				Delivery uint64 `json:"delivery"`
				Outcome  string `json:"outcome"`
				Message  string `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Seq == seq1 && l.Delivery == 1 && l.Message == "delivery settled" && l.Outcome != "waiting" {
				outcome = l.Outcome
				return true
			}
		}
		return outcome != ""
	})
	if outcome != "judged_elsewhere" {
		t.Errorf("t1's first delivery, whose request another delivery judged, settled %q; want it left to that delivery (judged_elsewhere)", outcome)
	}
}
