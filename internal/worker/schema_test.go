package worker_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/turnstream/turnstream/pkg/wire"
	"github.com/turnstream/turnstream/schemas"
)

var (
	compiled   = map[string]*jsonschema.Schema{}
	compiledMu sync.Mutex
)

func schema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	compiledMu.Lock()
	defer compiledMu.Unlock()
	if s, ok := compiled[name]; ok {
		return s
	}
	f, err := schemas.FS.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	compiled[name] = s
	return s
}

// conforms checks that every JSON record the stack published on a turn's
// subjects matches the public schemas: what workers write is the contract.
func conforms(t *testing.T, js jetstream.JetStream, session, turn string) {
	t.Helper()
	for _, c := range []struct{ stream, subject, schema string }{
		{wire.StreamMessages, "turn.message." + session, schemas.Message},
		{wire.StreamEvents, "turn.event." + session, schemas.SessionEvent},
		{wire.StreamChunks, "turn.chunk." + session + "." + turn, schemas.Chunk},
		{wire.StreamResults, "turn.result." + session, schemas.ToolResult},
	} {
		_, msgs := records[map[string]any](t, js, c.stream, c.subject)
		for _, m := range msgs {
			if ct := m.Headers().Get(wire.HeaderContentType); ct != "" && ct != wire.ContentTypeJSON {
				continue
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(m.Data()))
			if err != nil {
				t.Fatalf("%s record is not JSON: %v", c.subject, err)
			}
			if err := schema(t, c.schema).Validate(doc); err != nil {
				t.Errorf("%s record does not match %s: %v\n%s", c.subject, c.schema, err, m.Data())
			}
		}
	}
}
