package continuation_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
)

// FuzzParse: Parse never panics, and any envelope it returns serializes
// and parses back to itself.
func FuzzParse(f *testing.F) {
	for _, e := range []*continuation.Envelope{
		durable(),
		with(func(e *continuation.Envelope) { e.Mode, e.Cursor = continuation.ModeReplay, "" }),
		with(func(e *continuation.Envelope) {
			e.Mode, e.Cursor, e.LoopMessages, e.Context = continuation.ModeStatelessLoop, "", 3, nil
		}),
	} {
		b, err := continuation.Serialize(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"schema_version":2}`, `{"schema_version":1}`,
		`{"schema_version":1,"provider":"p","mode":"replay","model_name":"m",` +
			`"system_prompt_hash":"` + promptHash + `","toolset_hash":"` + toolsetHash + `",` +
			`"context":{"context_limit":1,"last_updated_at":"9999-12-31T23:59:59.999999999-23:59"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := continuation.Parse(data)
		if err != nil || e == nil {
			return
		}
		b, err := continuation.Serialize(e)
		if err != nil {
			t.Fatalf("Serialize(Parse(%q)) error = %v; want nil", data, err)
		}
		back, err := continuation.Parse(b)
		if err != nil {
			t.Fatalf("Parse(Serialize(Parse(%q))) error = %v; want nil", data, err)
		}
		if !equalEnvelopes(back, e) {
			t.Fatalf("Parse(Serialize(Parse(%q))) = %+v; want %+v", data, back, e)
		}
	})
}
