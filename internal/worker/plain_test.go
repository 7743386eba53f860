package worker_test

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/turnstream/turnstream/internal/mockllm"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestPlainNATSClient submits turns the way any NATS client in any language
// would, with no turnstream code on the client side: a JSON body with no
// headers at all (as `nats pub` sends), and a msgpack body with its
// Content-Type. The answer is read back from the streams the same way.
func TestPlainNATSClient(t *testing.T) {
	e := newEnv(t, mockllm.Default(mockllm.DefaultOptions{}))
	e.startWorker()

	t.Run("json", func(t *testing.T) {
		body := []byte(`{"session_id":"plain-json","turn_id":"t1","input":[{"role":"user","content":"hello there"}]}`)
		if err := e.nc.Publish("turn.submit.plain-json", body); err != nil {
			t.Fatal(err)
		}
		if ev := waitTerminal(t, e.js, "plain-json", "t1"); ev.Type != wire.EventTurnCompleted {
			t.Fatalf("terminal = %s %v; want turn.completed", ev.Type, ev.Payload)
		}
		_, msgs := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.plain-json")
		if len(msgs) != 2 {
			t.Fatalf("session log has %d records; want 2", len(msgs))
		}
		var answer map[string]any
		if err := wire.JSON.Unmarshal(msgs[1].Data(), &answer); err != nil {
			t.Fatalf("answer is not JSON: %v", err)
		}
		if answer["role"] != "assistant" || answer["content"] == "" || answer["finish_reason"] != "stop" {
			t.Errorf("answer = %v; want an assistant message with text and finish stop", answer)
		}
	})

	t.Run("msgpack", func(t *testing.T) {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		err := enc.Encode(map[string]any{
			"session_id": "plain-mp", "turn_id": "t1",
			"input": []any{map[string]any{"role": "user", "content": "hello in msgpack"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		m := &nats.Msg{Subject: "turn.submit.plain-mp", Data: buf.Bytes(), Header: nats.Header{}}
		m.Header.Set("Content-Type", "application/msgpack")
		if err := e.nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		if ev := waitTerminal(t, e.js, "plain-mp", "t1"); ev.Type != wire.EventTurnCompleted {
			t.Fatalf("terminal = %s %v; want turn.completed", ev.Type, ev.Payload)
		}
		_, msgs := records[wire.Message](t, e.js, wire.StreamMessages, "turn.message.plain-mp")
		if len(msgs) != 2 {
			t.Fatalf("session log has %d records; want 2", len(msgs))
		}
		for _, rec := range msgs {
			if ct := rec.Headers().Get("Content-Type"); ct != "application/msgpack" {
				t.Errorf("record Content-Type = %q; want application/msgpack (the request's encoding)", ct)
			}
		}
		var answer map[string]any
		if err := msgpack.Unmarshal(msgs[1].Data(), &answer); err != nil {
			t.Fatalf("answer is not msgpack: %v", err)
		}
		if answer["role"] != "assistant" || answer["content"] == "" || answer["session_id"] != "plain-mp" {
			t.Errorf("answer = %v; want the assistant message of plain-mp", answer)
		}
	})
}
