package bus

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestAckResult: the replies JetStream sends to a publish, read without a
// future: stored, refused (as the *jetstream.APIError that fenced and
// isWrongLastSequence classify), no stream, or not an ack at all.
func TestAckResult(t *testing.T) {
	for _, tt := range []struct {
		name  string
		msg   *nats.Msg
		want  error // nil: stored
		fence bool  // a wrong last sequence
	}{
		{name: "stored", msg: &nats.Msg{Data: []byte(`{"stream":"TURN_CHUNKS","seq":12}`)}},
		{name: "stored in a domain", msg: &nats.Msg{Data: []byte(`{"stream":"TURN_CHUNKS","domain":"hub","seq":12}`)}},
		{name: "duplicate", msg: &nats.Msg{Data: []byte(`{"stream":"TURN_CHUNKS","seq":12,"duplicate":true}`)}},
		{name: "stream named error", msg: &nats.Msg{Data: []byte(`{"stream":"error","seq":1}`)}},
		{name: "stream key later", msg: &nats.Msg{Data: []byte(`{"seq":1,"stream":"TURN_RAW"}`)}},
		{name: "wrong last sequence", msg: &nats.Msg{Data: []byte(`{"stream":"TURN_CHUNKS","error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}`)},
			want: &jetstream.APIError{}, fence: true},
		{name: "refused", msg: &nats.Msg{Data: []byte(`{"error":{"code":503,"err_code":10077,"description":"maximum messages per subject exceeded"}}`)},
			want: &jetstream.APIError{}},
		{name: "no stream", msg: &nats.Msg{Header: nats.Header{"Status": {"503"}}}, want: jetstream.ErrNoStreamResponse},
		{name: "empty stream", msg: &nats.Msg{Data: []byte(`{"stream":"","seq":1}`)}, want: jetstream.ErrInvalidJSAck},
		{name: "not json", msg: &nats.Msg{Data: []byte(`{"stream":"X"`)}, want: jetstream.ErrInvalidJSAck},
		{name: "empty", msg: &nats.Msg{}, want: jetstream.ErrInvalidJSAck},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ackResult(tt.msg)
			var apiErr *jetstream.APIError
			switch w := tt.want.(type) {
			case nil:
				if err != nil {
					t.Errorf("ackResult(%s) = %v; want nil", tt.msg.Data, err)
				}
			case *jetstream.APIError:
				if !errors.As(err, &apiErr) {
					t.Errorf("ackResult(%s) = %v; want a *jetstream.APIError", tt.msg.Data, err)
				}
			default:
				if !errors.Is(err, w) {
					t.Errorf("ackResult(%s) = %v; want %v", tt.msg.Data, err, w)
				}
			}
			if got := isWrongLastSequence(err); got != tt.fence {
				t.Errorf("isWrongLastSequence(ackResult(%s)) = %t; want %t", tt.msg.Data, got, tt.fence)
			}
		})
	}
}
