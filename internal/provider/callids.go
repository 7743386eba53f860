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
	// CallIDAnthropic: one or more characters of [a-zA-Z0-9_-] (Anthropic
	// Messages, tool_use ids and tool_use_id). Normalized ids already are;
	// another is remapped to "toolu_" and 24 base62 characters.
	CallIDAnthropic = "anthropic"
)

// callIDFormat is what a format accepts and how it derives an id from a
// foreign one (salted until unique).
type callIDFormat struct {
	valid  *regexp.Regexp
	prefix string
	n      int // base62 characters after the prefix
}

var callIDFormats = map[string]callIDFormat{
	CallIDAlnum9:    {valid: regexp.MustCompile(`^[A-Za-z0-9]{9}$`), n: 9},
	CallIDAnthropic: {valid: regexp.MustCompile(`^[a-zA-Z0-9_-]+$`), prefix: "toolu_", n: 24},
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// derive is the id of format f for id, with salt.
func (f callIDFormat) derive(id string, salt int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", id, salt))
	b := append(make([]byte, 0, len(f.prefix)+f.n), f.prefix...)
	for i := range f.n {
		b = append(b, base62[int(sum[i])%len(base62)])
	}
	return string(b)
}

// RemapCallIDs returns req with its tool-call ids in format, remapped the
// same way on both sides of every call/result pair, so a history written
// by one provider stays a valid conversation for another. Ids already in
// format are kept; the mapping is deterministic. req itself is not changed.
// A format without a rule (CallIDDefault, "") returns req as is.
func RemapCallIDs(req *Request, format string) *Request {
	f, ok := callIDFormats[format]
	if !ok {
		return req
	}
	ids := map[string]string{}
	taken := map[string]bool{}
	mapID := func(id string) string {
		if v, ok := ids[id]; ok {
			return v
		}
		v := id
		if !f.valid.MatchString(id) || taken[id] {
			for salt := 0; ; salt++ {
				if v = f.derive(id, salt); !taken[v] {
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
