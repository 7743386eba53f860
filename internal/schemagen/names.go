package schemagen

import (
	"strings"
	"unicode"
)

// defName is a type's name in $defs: snake_case, acronyms kept whole
// (BudgetValues: budget_values, LLMFinish: llm_finish, NATS: nats).
func defName(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prevLower := unicode.IsLower(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// acronyms are written in capitals in titles.
var acronyms = map[string]string{
	"api": "API", "http": "HTTP", "id": "ID", "llm": "LLM", "nats": "NATS", "sse": "SSE", "url": "URL",
}

// title is the title of a property or definition named snake_case:
// "input_tokens": "Input tokens", "http_status": "HTTP status",
// "duration_ms": "Duration (ms)".
func title(snake string) string {
	words := strings.Split(snake, "_")
	unit := ""
	if len(words) > 1 && words[len(words)-1] == "ms" {
		words, unit = words[:len(words)-1], " (ms)"
	}
	for i, w := range words {
		switch {
		case acronyms[w] != "":
			words[i] = acronyms[w]
		case i == 0 && w != "":
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ") + unit
}
