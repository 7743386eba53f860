package wire_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/turnstream/turnstream/pkg/wire"
)

// filled returns a value of p's type with every field set: integers to
// distinct positive numbers, booleans true, Enums to their last value,
// identifiers to valid tokens.
func filled(t testing.TB, p wire.EventPayload) wire.EventPayload {
	t.Helper()
	v := reflect.New(reflect.TypeOf(p)).Elem()
	n := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n++
			v.SetInt(int64(n))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n++
			v.SetUint(uint64(n))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.String:
			if e, ok := v.Interface().(wire.Enum); ok {
				values := e.Values()
				v.SetString(values[len(values)-1])
				return
			}
			n++
			v.SetString(fmt.Sprintf("id_%d", n))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			fill(v.Index(0))
			fill(v.Index(1))
		default:
			t.Fatalf("cannot fill a %s", v.Type())
		}
	}
	fill(v)
	return v.Interface().(wire.EventPayload)
}

// TestEventRoundTrip builds every event type's event from a fully set and
// a zero payload, encodes it with both codecs, decodes it and reads the
// payload back: the same value, on both wires, with the json names.
func TestEventRoundTrip(t *testing.T) {
	for _, zero := range wire.EventPayloads() {
		for _, p := range []wire.EventPayload{filled(t, zero), zero} {
			name := "full"
			if p == zero {
				name = "zero"
			}
			t.Run(reflect.TypeOf(p).Name()+"/"+name, func(t *testing.T) {
				ev := wire.NewEvent("s1", "t1", 2, 1, t0, p)
				if ev.Type != p.EventType() {
					t.Fatalf("NewEvent(%T).Type = %q; want %q", p, ev.Type, p.EventType())
				}
				if got, err := ev.Decode(); err != nil || got != p {
					t.Fatalf("NewEvent(%+v).Decode() = %+v, %v; want the payload", p, got, err)
				}
				for _, c := range []wire.Codec{wire.JSON, wire.Msgpack} {
					b, err := c.Marshal(&ev)
					if err != nil {
						t.Fatalf("%s Marshal: %v", c.ContentType(), err)
					}
					var back wire.SessionEvent
					if err := c.Unmarshal(b, &back); err != nil {
						t.Fatalf("%s Unmarshal(%s): %v", c.ContentType(), b, err)
					}
					got, err := back.Decode()
					if err != nil {
						t.Fatalf("%s Decode(%v): %v", c.ContentType(), back.Payload, err)
					}
					if got != p {
						t.Errorf("%s round trip = %+v; want %+v", c.ContentType(), got, p)
					}
					if len(back.Payload) != len(ev.Payload) {
						t.Errorf("%s payload keys = %v; want %v", c.ContentType(), back.Payload, ev.Payload)
					}
				}
			})
		}
	}
}

func TestNewEventPayload(t *testing.T) {
	ev := wire.NewEvent("s1", "t1", 3, 0, t0, wire.TurnFailed{
		Reason: wire.FailProvider, Step: 3, DurationMS: 1500, Class: wire.ClassServer, Attempts: 2,
	})
	want := map[string]any{
		"reason": "provider_failed", "step": 3, "duration_ms": int64(1500), "class": "SERVER", "attempts": 2,
	}
	if !reflect.DeepEqual(ev.Payload, want) {
		t.Errorf("NewEvent(TurnFailed).Payload = %#v; want %#v (plain values, omitempty fields left out)", ev.Payload, want)
	}
	if ev.Type != wire.EventTurnFailed || ev.SessionID != "s1" || ev.TurnID != "t1" || ev.Step != 3 || !ev.Time.Equal(t0) {
		t.Errorf("NewEvent envelope = %+v", ev)
	}
}

func TestDecodePayload(t *testing.T) {
	ev := wire.NewEvent("s1", "t1", 0, 0, t0, wire.TurnCompleted{Steps: 2, FinishReason: wire.FinishStop})
	got, err := wire.DecodePayload[wire.TurnCompleted](ev)
	if err != nil || got.Steps != 2 || got.FinishReason != wire.FinishStop {
		t.Errorf("DecodePayload[TurnCompleted] = %+v, %v; want steps 2, finish stop", got, err)
	}
	if _, err := wire.DecodePayload[wire.TurnFailed](ev); err == nil {
		t.Error("DecodePayload[TurnFailed](turn.completed) = nil error; want one")
	}
}

func TestDecodeLenient(t *testing.T) {
	tests := []struct {
		name    string
		payload map[string]any
		want    wire.EventPayload
		wantErr bool
	}{
		{"json numbers", map[string]any{"steps": float64(2), "input_tokens": float64(10)}, wire.TurnCompleted{Steps: 2, InputTokens: 10}, false},
		{"msgpack numbers", map[string]any{"steps": int8(2), "input_tokens": uint16(10)}, wire.TurnCompleted{Steps: 2, InputTokens: 10}, false},
		{"unknown key", map[string]any{"steps": 1, "added_later": "x"}, wire.TurnCompleted{Steps: 1}, false},
		{"null", map[string]any{"steps": nil}, wire.TurnCompleted{}, false},
		{"no payload", nil, wire.TurnCompleted{}, false},
		{"unknown enum value", map[string]any{"finish_reason": "later"}, wire.TurnCompleted{FinishReason: "later"}, false},
		{"fraction", map[string]any{"steps": 1.5}, nil, true},
		{"string count", map[string]any{"steps": "2"}, nil, true},
		{"number enum", map[string]any{"finish_reason": 1}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := wire.SessionEvent{Type: wire.EventTurnCompleted, SessionID: "s1", Payload: tt.payload}
			got, err := ev.Decode()
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Errorf("Decode(%v) = %+v, %v; want %+v, error %v", tt.payload, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestDecodeUnknownType(t *testing.T) {
	ev := wire.SessionEvent{Type: "turn.later", SessionID: "s1", Payload: map[string]any{"n": 1}}
	if _, err := ev.Decode(); !errors.Is(err, wire.ErrUnknownEventType) {
		t.Errorf("Decode(turn.later) error = %v; want ErrUnknownEventType", err)
	}
}

func ExampleNewEvent() {
	ev := wire.NewEvent("s1", "t1", 1, 0, t0, wire.ToolDispatched{ToolCallRef: wire.ToolCallRef{Tool: "get_time", CallID: "call_1"}, DeadlineMS: 60000})
	b, _ := wire.JSON.Marshal(&ev)
	fmt.Println(string(b))

	p, _ := ev.Decode()
	switch p := p.(type) {
	case wire.ToolDispatched:
		fmt.Println(p.Tool, p.DeadlineMS)
	}
	// Output:
	// {"type":"tool.dispatched","session_id":"s1","turn_id":"t1","step":1,"time":"2025-03-14T15:09:26.535897Z","payload":{"call_id":"call_1","deadline_ms":60000,"tool":"get_time"}}
	// get_time 60000
}
