package provider

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"slices"
)

// Tool-call id formats a destination accepts.
const (
	// CallIDDefault: up to 40 characters of [A-Za-z0-9_-] (OpenAI and most
	// compatible servers). Normalized ids already are.
	CallIDDefault = "default"
	// CallIDAlnum9: exactly 9 characters of [A-Za-z0-9] (Mistral).
	CallIDAlnum9 = "alnum9"
)

var alnum9 = regexp.MustCompile(`^[A-Za-z0-9]{9}$`)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// RemapCallIDs returns req with its tool-call ids in format, remapped the
// same way on both sides of every call/result pair, so a history written
// by one provider stays a valid conversation for another. Ids already in
// format are kept; the mapping is deterministic. req itself is not changed.
func RemapCallIDs(req *Request, format string) *Request {
	if format != CallIDAlnum9 {
		return req
	}
	ids := map[string]string{}
	taken := map[string]bool{}
	mapID := func(id string) string {
		if v, ok := ids[id]; ok {
			return v
		}
		v := id
		if !alnum9.MatchString(id) || taken[id] {
			for salt := 0; ; salt++ {
				sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", id, salt))
				b := make([]byte, 9)
				for i := range b {
					b[i] = base62[int(sum[i])%len(base62)]
				}
				if v = string(b); !taken[v] {
					break
				}
			}
		}
		ids[id], taken[v] = v, true
		return v
	}
	out := *req
	out.Messages = slices.Clone(req.Messages)
	for i := range out.Messages {
		m := &out.Messages[i]
		if len(m.ToolCalls) > 0 {
			m.ToolCalls = slices.Clone(m.ToolCalls)
			for j := range m.ToolCalls {
				m.ToolCalls[j].ID = mapID(m.ToolCalls[j].ID)
			}
		}
		if m.ToolCallID != "" {
			m.ToolCallID = mapID(m.ToolCallID)
		}
	}
	return &out
}
