package providertest

import (
	"slices"
	"strings"
	"testing"
)

// WantRequest is what a request must carry.
type WantRequest struct {
	// Path is the URL path.
	Path string
	// Header maps header names to their values; "" is absent.
	Header map[string]string
	// Body is the body, byte for byte.
	Body string
}

// CheckRequest fails t for every way r differs from want.
func CheckRequest(t testing.TB, r Request, want WantRequest) {
	t.Helper()
	if r.Path != want.Path {
		t.Errorf("request path = %q; want %q", r.Path, want.Path)
	}
	names := make([]string, 0, len(want.Header))
	for name := range want.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if got := r.Header.Get(name); got != want.Header[name] {
			t.Errorf("request header %s = %q; want %q", name, got, want.Header[name])
		}
	}
	if got := string(r.Body); got != want.Body {
		t.Errorf("request body = %q; want the body given, verbatim: %q", got, want.Body)
	}
}

// fromEnv marks the values PoisonEnv sets.
const fromEnv = "from-env"

// PoisonEnv sets every variable openai-go, anthropic-sdk-go (or a
// DeepSeek client) reads a key, token, base URL, organization, project,
// profile or headers from to a value no request may carry; CheckNoEnv
// checks a request for them. It uses t.Setenv: the test must not be
// parallel.
func PoisonEnv(t testing.TB) {
	t.Helper()
	for k, v := range map[string]string{
		"OPENAI_API_KEY":        "sk-" + fromEnv,
		"DEEPSEEK_API_KEY":      "sk-" + fromEnv,
		"OPENAI_BASE_URL":       "http://127.0.0.1:1/env",
		"OPENAI_ORG_ID":         "org-" + fromEnv,
		"OPENAI_PROJECT_ID":     "proj-" + fromEnv,
		"OPENAI_CUSTOM_HEADERS": "X-Env: " + fromEnv,
		// anthropic-sdk-go's client defaults and credential chain.
		"ANTHROPIC_API_KEY":        "sk-ant-" + fromEnv,
		"ANTHROPIC_AUTH_TOKEN":     "tok-" + fromEnv,
		"ANTHROPIC_BASE_URL":       "http://127.0.0.1:1/env",
		"ANTHROPIC_CUSTOM_HEADERS": "X-Env: " + fromEnv,
		"ANTHROPIC_PROFILE":        fromEnv,
	} {
		t.Setenv(k, v)
	}
}

// CheckNoEnv fails t if r carries anything PoisonEnv set.
func CheckNoEnv(t testing.TB, r Request) {
	t.Helper()
	for _, h := range []string{"OpenAI-Organization", "OpenAI-Project", "X-Env"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("header %s = %q; want none (read from the environment)", h, v)
		}
	}
	for name, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, fromEnv) {
				t.Errorf("header %s = %q; want nothing read from the environment", name, v)
			}
		}
	}
}
