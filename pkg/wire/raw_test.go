package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/textproto"
	"reflect"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/wire"
)

// throughNATS returns h as a NATS client reads it back: nats.go trims a
// value's surrounding white space and turns CR and LF into spaces when it
// writes, and drops leading spaces and tabs when it reads.
func throughNATS(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		for _, v := range vs {
			v = strings.NewReplacer("\r", " ", "\n", " ").Replace(textproto.TrimString(v))
			out[k] = append(out[k], strings.TrimLeft(v, " \t"))
		}
	}
	return out
}

func TestRawFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    wire.RawFrame
		// want are the header values written, "" for an absent header.
		wantProvider, wantEvent string
	}{
		{name: "chat frame", f: wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 2, Seq: 3,
			Provider: "openai", Model: "gpt-4o-mini", Bytes: []byte(`{"choices":[{"delta":{"content":"hi"}}]}`)},
			wantProvider: "openai"},
		{name: "event frame", f: wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 0, Attempt: 1, Seq: 1,
			Provider: "oai", Model: "o4-mini", Event: "response.output_text.delta", Bytes: []byte(`{"delta":"Hi"}`)},
			wantProvider: "oai", wantEvent: "response.output_text.delta"},
		{name: "done sentinel, no target", f: wire.RawFrame{SessionID: "s", TurnID: "t", Step: 2, Attempt: 1, Seq: 9, Bytes: []byte("[DONE]")}},
		{name: "bytes not text, white space kept", f: wire.RawFrame{SessionID: "s", TurnID: "t", Attempt: 1, Seq: 1,
			Bytes: []byte(" \xff\x00{\"a\":1}\n")}},
		{name: "empty frame", f: wire.RawFrame{SessionID: "s", TurnID: "t", Attempt: 1, Seq: 1, Bytes: []byte{}}},
		{name: "values a client would change are quoted", f: wire.RawFrame{SessionID: "s", TurnID: "t", Attempt: 1, Seq: 1,
			Provider: " padded ", Model: "modèle", Event: "a\tb\r\nc\xff", Bytes: []byte("x")},
			wantProvider: `" padded "`, wantEvent: `"a\tb\r\nc\xff"`},
		{name: "a value starting with a quote is quoted", f: wire.RawFrame{SessionID: "s", TurnID: "t", Attempt: 1, Seq: 1,
			Provider: `"q"`, Event: "has inner spaces", Bytes: []byte("x")},
			wantProvider: `"\"q\""`, wantEvent: "has inner spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := tt.f.Header()
			if err != nil {
				t.Fatalf("Header() error = %v", err)
			}
			for name, want := range map[string]string{wire.HeaderProvider: tt.wantProvider, wire.HeaderEvent: tt.wantEvent} {
				if got := strings.Join(h[name], ","); got != want {
					t.Errorf("Header()[%s] = %q; want %q", name, got, want)
				}
			}
			subj := wire.Subjects{}.Raw(tt.f.SessionID, tt.f.TurnID)
			got, err := wire.Subjects{}.ParseRawFrame(subj, throughNATS(h), tt.f.Bytes)
			if err != nil {
				t.Fatalf("ParseRawFrame(%s, Header()) error = %v", subj, err)
			}
			if !reflect.DeepEqual(got, tt.f) {
				t.Errorf("ParseRawFrame(Header()) = %+v; want %+v", got, tt.f)
			}
		})
	}
}

func TestRawFrameHeaderRefuses(t *testing.T) {
	for _, tt := range []struct {
		f     wire.RawFrame
		field string
	}{
		{wire.RawFrame{Step: -1, Attempt: 1, Seq: 1}, wire.HeaderStep},
		{wire.RawFrame{Step: 1, Attempt: 0, Seq: 1}, wire.HeaderAttempt},
		{wire.RawFrame{Step: 1, Attempt: 1, Seq: 0}, wire.HeaderSeq},
		{wire.RawFrame{Step: 1, Attempt: 1, Seq: 1 << 31}, wire.HeaderSeq},
	} {
		var ve *wire.ValidationError
		if _, err := tt.f.Header(); !errors.As(err, &ve) || ve.Field != tt.field {
			t.Errorf("Header(%+v) error = %v; want a *ValidationError on %s", tt.f, err, tt.field)
		}
	}
}

func TestParseRawFrameErrors(t *testing.T) {
	good := func() map[string][]string {
		return map[string][]string{
			wire.HeaderStep: {"1"}, wire.HeaderAttempt: {"1"}, wire.HeaderSeq: {"2"},
			wire.HeaderProvider: {"p"}, wire.HeaderModel: {"m"},
			// Headers the server and the fence add are not the frame's.
			"Nats-Expected-Last-Subject-Sequence": {"7"}, "Nats-Msg-Id": {"x"},
		}
	}
	with := func(k string, vs ...string) map[string][]string {
		h := good()
		if vs == nil {
			delete(h, k)
		} else {
			h[k] = vs
		}
		return h
	}
	const subj = "turn.raw.s1.t1"
	tests := []struct {
		name    string
		subject string
		header  map[string][]string
		reason  string
		field   string
	}{
		{"chunk subject", "turn.chunk.s1.t1", good(), wire.ReasonInvalidSubject, "subject"},
		{"other prefix", "acme.raw.s1.t1", good(), wire.ReasonInvalidSubject, "subject"},
		{"no turn", "turn.raw.s1", good(), wire.ReasonInvalidSubject, "subject"},
		{"extra token", "turn.raw.s1.t1.x", good(), wire.ReasonInvalidSubject, "subject"},
		{"fence marker", "turn.raw.=fence.s1", good(), wire.ReasonInvalidSubject, "subject"},
		{"empty session", "turn.raw..t1", good(), wire.ReasonInvalidSubject, "subject"},
		{"missing step", subj, with(wire.HeaderStep), wire.ReasonMalformed, wire.HeaderStep},
		{"missing attempt", subj, with(wire.HeaderAttempt), wire.ReasonMalformed, wire.HeaderAttempt},
		{"missing seq", subj, with(wire.HeaderSeq), wire.ReasonMalformed, wire.HeaderSeq},
		{"seq twice", subj, with(wire.HeaderSeq, "1", "2"), wire.ReasonMalformed, wire.HeaderSeq},
		{"seq not a number", subj, with(wire.HeaderSeq, "two"), wire.ReasonMalformed, wire.HeaderSeq},
		{"seq signed", subj, with(wire.HeaderSeq, "+2"), wire.ReasonMalformed, wire.HeaderSeq},
		{"step negative", subj, with(wire.HeaderStep, "-1"), wire.ReasonMalformed, wire.HeaderStep},
		{"attempt zero", subj, with(wire.HeaderAttempt, "0"), wire.ReasonMalformed, wire.HeaderAttempt},
		{"seq zero", subj, with(wire.HeaderSeq, "0"), wire.ReasonMalformed, wire.HeaderSeq},
		{"seq too large", subj, with(wire.HeaderSeq, "99999999999999999999"), wire.ReasonMalformed, wire.HeaderSeq},
		{"model twice", subj, with(wire.HeaderModel, "a", "b"), wire.ReasonMalformed, wire.HeaderModel},
		{"event badly quoted", subj, with(wire.HeaderEvent, `"open`), wire.ReasonMalformed, wire.HeaderEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.Subjects{}.ParseRawFrame(tt.subject, tt.header, []byte("x"))
			var ve *wire.ValidationError
			if !errors.As(err, &ve) || ve.Reason != tt.reason || ve.Field != tt.field {
				t.Errorf("ParseRawFrame(%s, %v) error = %v; want a *ValidationError %s on %s", tt.subject, tt.header, err, tt.reason, tt.field)
			}
		})
	}
	f, err := wire.Subjects{}.ParseRawFrame(subj, good(), []byte("x"))
	if err != nil || f.Step != 1 || f.Seq != 2 || f.Provider != "p" || f.Event != "" {
		t.Errorf("ParseRawFrame(good) = %+v, %v; want step 1, seq 2, provider p, no event", f, err)
	}
	if f, err := (wire.Subjects{Prefix: "acme.turn"}).ParseRawFrame("acme.turn.raw.s-1.t_1", good(), nil); err != nil || f.SessionID != "s-1" || f.TurnID != "t_1" {
		t.Errorf("ParseRawFrame(prefixed) = %+v, %v; want session s-1, turn t_1", f, err)
	}
}

// FuzzRawFrame: any target, event and bytes read back unchanged through a
// NATS client's header handling.
func FuzzRawFrame(f *testing.F) {
	for _, s := range []struct{ provider, event, data string }{
		{"openai", "", `{"a":1}`}, {" x", "\r\n", "[DONE]"}, {`"`, "\xff", ""}, {"\t", `"\q"`, "\x00"}, {"é", "a b", " "},
	} {
		f.Add(s.provider, s.event, []byte(s.data), 3)
	}
	f.Fuzz(func(t *testing.T, provider, event string, data []byte, seq int) {
		in := wire.RawFrame{SessionID: "s", TurnID: "t", Step: 1, Attempt: 1, Seq: seq, Provider: provider, Model: event + provider, Event: event, Bytes: data}
		h, err := in.Header()
		if seq < 1 || seq > 1<<31-1 {
			if err == nil {
				t.Fatalf("Header(seq %d) = nil error; want a refusal", seq)
			}
			return
		}
		if err != nil {
			t.Fatalf("Header(%+v) error = %v", in, err)
		}
		got, err := wire.Subjects{}.ParseRawFrame("turn.raw.s.t", throughNATS(h), data)
		if err != nil {
			t.Fatalf("ParseRawFrame(Header(%+v)) error = %v", in, err)
		}
		if got.Provider != provider || got.Model != in.Model || got.Event != event || got.Seq != seq || !bytes.Equal(got.Bytes, data) {
			t.Errorf("ParseRawFrame(Header(%+v)) = %+v; want it unchanged", in, got)
		}
	})
}

func ExampleRawFrame_Header() {
	f := wire.RawFrame{SessionID: "s1", TurnID: "t1", Step: 1, Attempt: 1, Seq: 4,
		Provider: "openai", Model: "gpt-4o-mini", Bytes: []byte(`{"choices":[]}`)}
	h, _ := f.Header()
	for _, k := range []string{wire.HeaderStep, wire.HeaderAttempt, wire.HeaderSeq, wire.HeaderProvider, wire.HeaderModel, wire.HeaderEvent} {
		fmt.Printf("%s: %q\n", k, h[k])
	}
	back, _ := wire.Subjects{}.ParseRawFrame(wire.Subjects{}.Raw("s1", "t1"), h, f.Bytes)
	fmt.Println(back.SessionID, back.TurnID, back.Seq, string(back.Bytes))
	// Output:
	// Turn-Step: ["1"]
	// Turn-Attempt: ["1"]
	// Turn-Seq: ["4"]
	// Turn-Provider: ["openai"]
	// Turn-Model: ["gpt-4o-mini"]
	// Turn-Event: []
	// s1 t1 4 {"choices":[]}
}
