package continuation

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/wire"
)

// SystemPromptHash returns the sha256 hex digest of a system prompt. Only
// the digest is kept, in worker-only state.
func SystemPromptHash(system string) string {
	h := sha256.New()
	h.Write([]byte("turnstream.continuation.system.v1\x00"))
	h.Write([]byte(system))
	return hex.EncodeToString(h.Sum(nil))
}

// ToolsetHash returns the sha256 hex digest of a toolset's canonical
// encoding: each tool (name, description, parameter schema) as JSON with
// object keys sorted at every depth, the tools sorted by name (ties by
// encoding). The digest does not depend on the order of the tools or of
// any map, so it is stable across runs; nil and empty toolsets agree.
func ToolsetHash(tools []wire.Tool) string {
	type entry struct {
		name string
		enc  []byte
	}
	entries := make([]entry, len(tools))
	for i, t := range tools {
		entries[i] = entry{t.Name, encodeTool(t)}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.name, b.name), bytes.Compare(a.enc, b.enc))
	})
	h := sha256.New()
	h.Write([]byte("turnstream.continuation.toolset.v1\x00"))
	for _, e := range entries {
		fmt.Fprintf(h, "%d:", len(e.enc))
		h.Write(e.enc)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// encodeTool is t's canonical encoding: encoding/json sorts map keys at
// every depth. A schema JSON cannot encode (NaN, a func) falls back to
// fmt's %#v, which sorts map keys too, under a distinct prefix.
func encodeTool(t wire.Tool) []byte {
	if b, err := json.Marshal(t); err == nil {
		return b
	}
	return fmt.Appendf([]byte("go:"), "%#v", t)
}
