package turn

import (
	"errors"
	"fmt"
)

// Sentinels of a tool schema that cannot be used; a *SchemaError wraps
// one, so errors.Is tells them apart.
var (
	// ErrSchemaTooLarge: the parameters exceed a SchemaLimits limit
	// (size, depth, nodes, references, patterns, fan-in).
	ErrSchemaTooLarge = errors.New("turn: tool schema exceeds a limit")
	// ErrSchemaInvalid: the parameters are not a valid JSON Schema.
	ErrSchemaInvalid = errors.New("turn: tool schema is not a valid JSON Schema")
	// ErrSchemaRef: the parameters refer outside themselves (a file, a
	// URL, another resource, an unknown metaschema). Nothing is loaded:
	// only in-document references are resolved.
	ErrSchemaRef = errors.New("turn: tool schema refers outside itself")
)

// Reasons of a SchemaError, stable enums a worker can carry in a
// rejection.
const (
	SchemaReasonTooLarge   = "schema_too_large"
	SchemaReasonInvalid    = "schema_invalid"
	SchemaReasonForeignRef = "schema_forbidden_ref"
)

// SchemaError reports why a tool's parameter schema was refused. Its text
// names the tool, the place in the schema and the rule; it never quotes a
// value of the schema beyond keyword names.
type SchemaError struct {
	// Tool is the tool's name.
	Tool string
	// Reason is one of the SchemaReason constants.
	Reason string
	// Path is the JSON pointer of the offending place in the parameters,
	// "" for the whole document.
	Path string
	// Detail says what is wrong.
	Detail string
}

func (e *SchemaError) Error() string {
	at := ""
	if e.Path != "" {
		at = " at " + e.Path
	}
	return fmt.Sprintf("turn: tool %s: parameters%s: %s", e.Tool, at, e.Detail)
}

// Unwrap returns the sentinel of the error's Reason.
func (e *SchemaError) Unwrap() error {
	switch e.Reason {
	case SchemaReasonTooLarge:
		return ErrSchemaTooLarge
	case SchemaReasonForeignRef:
		return ErrSchemaRef
	}
	return ErrSchemaInvalid
}

// schemaProblem is a SchemaError before it knows its tool: compiled
// schemas are shared by content, so is their verdict.
type schemaProblem struct {
	reason, path, detail string
}

func (p *schemaProblem) forTool(name string) *SchemaError {
	return &SchemaError{Tool: name, Reason: p.reason, Path: p.path, Detail: p.detail}
}

func tooLarge(path, format string, args ...any) *schemaProblem {
	return &schemaProblem{reason: SchemaReasonTooLarge, path: path, detail: fmt.Sprintf(format, args...)}
}

func invalidSchema(path, format string, args ...any) *schemaProblem {
	return &schemaProblem{reason: SchemaReasonInvalid, path: path, detail: fmt.Sprintf(format, args...)}
}

func foreignRef(path, format string, args ...any) *schemaProblem {
	return &schemaProblem{reason: SchemaReasonForeignRef, path: path, detail: fmt.Sprintf(format, args...)}
}
