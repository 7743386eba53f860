package turn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ToolSchemas are the compiled parameter schemas of a request's tools.
type ToolSchemas map[string]*jsonschema.Schema

// CompileTools compiles each tool's parameter schema. A schema that does not
// compile is the request's fault: workers reject the request with it.
func CompileTools(tools []wire.Tool) (ToolSchemas, error) {
	out := make(ToolSchemas, len(tools))
	for _, t := range tools {
		if t.Parameters == nil {
			out[t.Name] = nil
			continue
		}
		// Re-read through JSON: msgpack requests carry Go integer types the
		// compiler does not take.
		b, err := json.Marshal(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("turn: tool %s: parameters: %w", t.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("turn: tool %s: parameters: %w", t.Name, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		url := "tool:" + t.Name
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("turn: tool %s: parameters: %w", t.Name, err)
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("turn: tool %s: parameters are not a valid JSON Schema: %w", t.Name, err)
		}
		out[t.Name] = s
	}
	return out, nil
}

// Check validates a call's arguments against its tool's schema; the error
// is written for the model, which may correct its call.
func (ts ToolSchemas) Check(name, arguments string) error {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(arguments))
	if err != nil {
		return fmt.Errorf("the arguments are not valid JSON")
	}
	if _, ok := doc.(map[string]any); !ok {
		return fmt.Errorf("the arguments are not a JSON object")
	}
	s := ts[name]
	if s == nil {
		return nil
	}
	if err := s.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("the arguments do not match the tool's parameters: %s", strings.ReplaceAll(ve.Error(), "\n", "; "))
		}
		return fmt.Errorf("the arguments do not match the tool's parameters")
	}
	return nil
}
