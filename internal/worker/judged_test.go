package worker_test

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/internal/worker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// syncBuf is a goroutine-safe log sink.

// TestJudgedElsewhereDoesNotFenceTheOwner: a delivery paused in decode
// past its ack wait, whose intake guard another delivery moved meanwhile,
// leaves the request to that delivery and touches nothing: its take asks
// whether it is still admitted before it fences anyone (bus.Take's admit),
// so the owner, mid-turn, keeps its lease and goes on writing.
//
// The test plays the owner (the redelivery on another worker): while the
// worker's delivery is held in decode, it moves the guard and takes the
// lease for the same request, as the owner's take would.
func TestJudgedElsewhereDoesNotFenceTheOwner(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	ctx := ctxFor(t)
	const marker = "HOLD-ME-IN-DECODE-REVIEW"
	inDecode, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	worker.SetDecodeHook(func(data []byte) {
		if bytes.Contains(data, []byte(marker)) {
			once.Do(func() { close(inDecode); <-resume })
		}
	})
	t.Cleanup(func() { worker.SetDecodeHook(nil) })
	logs := &syncBuffer{}
	e.startWorkerWith(func(o *worker.Options) { o.Log = zerolog.New(logs).Level(zerolog.InfoLevel) })

	body := `{"session_id":"je","turn_id":"t1","input":[{"role":"user","content":"` + marker + `"}]}`
	ack, err := e.js.Publish(ctx, "turn.submit.je", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inDecode:
	case <-time.After(wait):
		t.Fatal("the request was never decoded")
	}
	// The owner: its intake moved the guard (as a redelivery that finds
	// it does), then it took the lease for the request and runs the turn.
	kv, err := e.js.KeyValue(ctx, bus.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := "=intake." + strconv.FormatUint(ack.Sequence, 10)
	g, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatalf("the guard: %v", err)
	}
	if _, err := kv.Update(ctx, key, []byte(`{"owner":"other","delivery":2,"isolated":true}`), g.Revision()); err != nil {
		t.Fatal(err)
	}
	_, ojs := e.srv.JetStream()
	ob, err := bus.New(ctx, ojs, wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	ost, err := ob.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := ob.TakeLease(ctx, ost, "je", "t1", ack.Sequence, "owner")
	if err != nil {
		t.Fatal(err)
	}
	olog, err := ob.LoadLog(ctx, "je")
	if err != nil {
		t.Fatal(err)
	}
	ow := owner.Turn(wire.JSON, olog)
	if err := ow.Append(ctx, &wire.Message{SessionID: "je", TurnID: "t1", Role: wire.RoleUser, Content: "owner's input"}); err != nil {
		t.Fatalf("owner append = %v", err)
	}

	close(resume) // the paused delivery wakes
	eventually(t, "the woken delivery sees its guard moved", func() bool {
		return strings.Contains(logs.String(), "another delivery judged this request")
	})
	if held, err := owner.Held(ctx); err != nil || !held {
		t.Errorf("owner.Held() = %v, %v after the judged-elsewhere delivery left; want the owner still holding the lease", held, err)
	}
	if err := ow.Append(ctx, &wire.Message{SessionID: "je", TurnID: "t1", Role: wire.RoleAssistant, Content: "owner's answer"}); err != nil {
		t.Errorf("owner append after the judged-elsewhere delivery left = %v; want stored", err)
	}
}
