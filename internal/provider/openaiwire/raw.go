package openaiwire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Present reports whether a raw JSON field was sent and is not null.
func Present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// String reads a raw JSON field that should be a string; ok is false for
// any other type.
func String(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Code renders an error code that may be a string, a number or null.
func Code(raw json.RawMessage) string {
	if s, ok := String(raw); ok {
		return s
	}
	if Present(raw) {
		return strings.TrimSpace(string(raw))
	}
	return ""
}
