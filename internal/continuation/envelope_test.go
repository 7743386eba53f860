package continuation_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
)

func TestParse(t *testing.T) {
	h := strings.Repeat("a", 64)
	base := `"schema_version":1,"provider":"openai","model_name":"gpt-5","system_prompt_hash":"` + h + `","toolset_hash":"` + h + `"`
	tests := []struct {
		name    string
		in      string
		want    *continuation.Envelope // nil with wantErr nil: no state
		wantErr error
	}{
		// Valid.
		{
			name: "valid durable with context",
			in:   `{` + base + `,"mode":"responses","cursor":"resp_1","context":{"provider_reported_input_tokens":1234,"context_limit":400000,"last_updated_at":"2026-03-01T12:00:00Z"}}`,
			want: with(func(e *continuation.Envelope) { e.SystemPromptHash, e.ToolsetHash = h, h }),
		},
		{
			name: "valid replay with context figures",
			in:   `{` + base + `,"mode":"replay","context":{"context_limit":128000,"last_updated_at":"2026-03-01T12:00:00Z"}}`,
			want: with(func(e *continuation.Envelope) {
				e.SystemPromptHash, e.ToolsetHash, e.Mode, e.Cursor = h, h, continuation.ModeReplay, ""
				e.Context = &continuation.ContextFigures{ContextLimit: 128000, LastUpdatedAt: epoch}
			}),
		},
		{
			name: "valid stateless loop",
			in:   `{` + base + `,"mode":"stateless-loop","loop_messages":4}`,
			want: with(func(e *continuation.Envelope) {
				e.SystemPromptHash, e.ToolsetHash, e.Mode, e.Cursor, e.LoopMessages, e.Context = h, h, continuation.ModeStatelessLoop, "", 4, nil
			}),
		},
		{
			name: "unknown fields are ignored",
			in:   `{` + base + `,"mode":"responses","cursor":"resp_1","later":true}`,
			want: with(func(e *continuation.Envelope) { e.SystemPromptHash, e.ToolsetHash, e.Context = h, h, nil }),
		},
		{
			name: "null context",
			in:   `{` + base + `,"mode":"responses","cursor":"resp_1","context":null}`,
			want: with(func(e *continuation.Envelope) { e.SystemPromptHash, e.ToolsetHash, e.Context = h, h, nil }),
		},

		// Null: no state.
		{name: "null", in: `null`},
		{name: "null with whitespace", in: " \n null \t"},
		{name: "empty", in: ``},
		{name: "whitespace only", in: "  \n"},

		// Malformed.
		{name: "malformed truncated", in: `{"schema_version":1,"provider":`, wantErr: continuation.ErrMalformed},
		{name: "malformed not json", in: `resp_1`, wantErr: continuation.ErrMalformed},
		{name: "malformed array", in: `[1]`, wantErr: continuation.ErrMalformed},
		{name: "malformed string", in: `"{}"`, wantErr: continuation.ErrMalformed},
		{name: "malformed version type", in: `{"schema_version":"1"}`, wantErr: continuation.ErrMalformed},
		{name: "malformed field type", in: `{` + base + `,"mode":"responses","cursor":7}`, wantErr: continuation.ErrMalformed},
		{name: "malformed trailing data", in: `{` + base + `,"mode":"responses","cursor":"resp_1"} {}`, wantErr: continuation.ErrMalformed},

		// Wrong schema version.
		{name: "version 2", in: `{"schema_version":2,"provider":"openai","cursor":{"id":"resp_1"}}`, wantErr: continuation.ErrVersion},
		{name: "version 0", in: `{` + strings.Replace(base, `"schema_version":1`, `"schema_version":0`, 1) + `,"mode":"replay"}`, wantErr: continuation.ErrVersion},
		{name: "version missing", in: `{"provider":"openai","mode":"responses","cursor":"resp_1"}`, wantErr: continuation.ErrVersion},
		{name: "empty object", in: `{}`, wantErr: continuation.ErrVersion},

		// Missing or contradictory fields.
		{name: "missing provider", in: `{"schema_version":1,"mode":"replay","model_name":"m","system_prompt_hash":"` + h + `","toolset_hash":"` + h + `"}`, wantErr: continuation.ErrInvalid},
		{name: "missing mode", in: `{` + base + `}`, wantErr: continuation.ErrInvalid},
		{name: "missing model", in: `{"schema_version":1,"provider":"p","mode":"replay","system_prompt_hash":"` + h + `","toolset_hash":"` + h + `"}`, wantErr: continuation.ErrInvalid},
		{name: "missing system prompt hash", in: `{"schema_version":1,"provider":"p","mode":"replay","model_name":"m","toolset_hash":"` + h + `"}`, wantErr: continuation.ErrInvalid},
		{name: "missing toolset hash", in: `{"schema_version":1,"provider":"p","mode":"replay","model_name":"m","system_prompt_hash":"` + h + `"}`, wantErr: continuation.ErrInvalid},
		{name: "durable without cursor", in: `{` + base + `,"mode":"responses"}`, wantErr: continuation.ErrInvalid},
		{name: "cursor on replay", in: `{` + base + `,"mode":"replay","cursor":"resp_1"}`, wantErr: continuation.ErrInvalid},
		{name: "cursor on stateless loop", in: `{` + base + `,"mode":"stateless-loop","cursor":"resp_1"}`, wantErr: continuation.ErrInvalid},
		{name: "loop messages on durable", in: `{` + base + `,"mode":"responses","cursor":"r","loop_messages":2}`, wantErr: continuation.ErrInvalid},
		{name: "negative loop messages", in: `{` + base + `,"mode":"stateless-loop","loop_messages":-1}`, wantErr: continuation.ErrInvalid},
		{name: "unknown mode", in: `{` + base + `,"mode":"interactions","cursor":"i_1"}`, wantErr: continuation.ErrInvalid},
		{name: "hash not hex", in: `{"schema_version":1,"provider":"p","mode":"replay","model_name":"m","system_prompt_hash":"sha256:x","toolset_hash":"` + h + `"}`, wantErr: continuation.ErrInvalid},
		{name: "negative context limit", in: `{` + base + `,"mode":"replay","context":{"context_limit":-1}}`, wantErr: continuation.ErrInvalid},
		{name: "negative input tokens", in: `{` + base + `,"mode":"replay","context":{"provider_reported_input_tokens":-5,"context_limit":1}}`, wantErr: continuation.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := continuation.Parse([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Parse(%q) error = %v; want %v", tt.in, err, tt.wantErr)
			}
			if !equalEnvelopes(got, tt.want) {
				t.Errorf("Parse(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseVersionError(t *testing.T) {
	_, err := continuation.Parse([]byte(`{"schema_version":2}`))
	var ve *continuation.VersionError
	if !errors.As(err, &ve) || ve.Got != 2 {
		t.Fatalf("Parse(version 2) error = %v; want *VersionError{Got: 2}", err)
	}
	if errors.Is(err, continuation.ErrMalformed) || errors.Is(err, continuation.ErrInvalid) {
		t.Errorf("Parse(version 2) error = %v; want only ErrVersion", err)
	}
}

func TestSerialize(t *testing.T) {
	tests := []struct {
		name    string
		in      *continuation.Envelope
		wantErr error
	}{
		{name: "durable", in: durable()},
		{name: "durable without context", in: with(func(e *continuation.Envelope) { e.Context = nil })},
		{name: "replay", in: with(func(e *continuation.Envelope) { e.Mode, e.Cursor = continuation.ModeReplay, "" })},
		{name: "stateless loop", in: with(func(e *continuation.Envelope) {
			e.Mode, e.Cursor, e.LoopMessages = continuation.ModeStatelessLoop, "", 3
		})},
		{name: "nil", in: nil},
		{name: "wrong version", in: with(func(e *continuation.Envelope) { e.SchemaVersion = 2 }), wantErr: continuation.ErrVersion},
		{name: "durable without cursor", in: with(func(e *continuation.Envelope) { e.Cursor = "" }), wantErr: continuation.ErrInvalid},
		{name: "missing model", in: with(func(e *continuation.Envelope) { e.ModelName = "" }), wantErr: continuation.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := continuation.Serialize(tt.in)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Serialize(%+v) error = %v; want %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got, err := continuation.Parse(b)
			if err != nil || !equalEnvelopes(got, tt.in) {
				t.Errorf("Parse(Serialize(%+v)) = %+v, %v; want the same envelope, nil", tt.in, got, err)
			}
		})
	}
}

func TestSerializeWire(t *testing.T) {
	e := durable()
	e.SystemPromptHash = strings.Repeat("a", 64)
	e.ToolsetHash = strings.Repeat("b", 64)
	got := string(mustSerialize(t, e))
	want := `{"schema_version":1,"provider":"openai","mode":"responses","model_name":"gpt-5",` +
		`"system_prompt_hash":"` + e.SystemPromptHash + `","toolset_hash":"` + e.ToolsetHash + `","cursor":"resp_1",` +
		`"context":{"provider_reported_input_tokens":1234,"context_limit":400000,"last_updated_at":"2026-03-01T12:00:00Z"}}`
	if got != want {
		t.Errorf("Serialize(durable) = %s; want %s", got, want)
	}
}
