package redact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// docGen builds random JSON tool arguments with planted secrets, each in a
// context that makes it detectable, and records what it planted.
type docGen struct {
	r       *rand.Rand
	planted []string
}

var (
	plainKeys  = []string{"path", "command", "cwd", "name", "content", "max_tokens", "token_count", "args", "env", "note", "url", "mode"}
	secretKeys = []string{"password", "api_key", "apiKey", "client_secret", "GITHUB_TOKEN", "x-api-key", "Authorization", "aws_secret_access_key"}
	plainTexts = []string{"ls -la", "hello world", "the token count is 5", "password reset instructions", "café ☕", "a\"b\\c", "line1\nline2\ttab", "https://example.com/a?b=c"}
)

func (g *docGen) ws() string {
	return []string{"", "", " ", "\n  ", "\t"}[g.r.IntN(5)]
}

// jsonString encodes s as a JSON string, escaping some characters that
// need no escape, to hide them from a raw scan.
func (g *docGen) jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == '/' && g.r.IntN(2) == 0:
			b.WriteString(`\/`)
		case r < 0x80 && g.r.IntN(40) == 0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// secretText returns a text holding a planted secret in a detectable
// context.
func (g *docGen) secretText() string {
	if g.r.IntN(2) == 0 {
		sec := shapedSecrets[g.r.IntN(len(shapedSecrets))]
		g.planted = append(g.planted, sec)
		return []string{"key is " + sec, sec, "echo " + sec + " | gh auth login", "x=" + sec + "\n"}[g.r.IntN(4)]
	}
	sec := contextSecrets[g.r.IntN(len(contextSecrets))]
	g.planted = append(g.planted, sec)
	if strings.Contains(sec, "/") || sec == keyBasic {
		return "export AWS_SECRET_ACCESS_KEY=" + sec
	}
	return []string{
		"curl -H \"Authorization: Bearer " + sec + "\" https://x",
		"DB_PASSWORD=" + sec + "\nDEBUG=1",
		"git clone https://u:" + sec + "@host/r",
		"{\"password\": \"" + sec + "\"}",
	}[g.r.IntN(4)]
}

func (g *docGen) value(depth int, secret bool) string {
	n := g.r.IntN(10)
	if depth > 3 {
		n = 5 + g.r.IntN(5)
	}
	switch {
	case n < 2:
		return g.object(depth + 1)
	case n < 3:
		var parts []string
		for range g.r.IntN(4) {
			parts = append(parts, g.ws()+g.value(depth+1, secret)+g.ws())
		}
		return "[" + strings.Join(parts, ",") + "]"
	case n < 4:
		return []string{"true", "false", "null", "0", "-12.5e3", "42"}[g.r.IntN(6)]
	case secret:
		sec := []string{keyPassword, keyBearer, keyAWSSecret, keyOpenAI}[g.r.IntN(4)]
		g.planted = append(g.planted, sec)
		return g.jsonString(sec)
	case n < 7:
		return g.jsonString(g.secretText())
	default:
		return g.jsonString(plainTexts[g.r.IntN(len(plainTexts))])
	}
}

func (g *docGen) object(depth int) string {
	var parts []string
	for range g.r.IntN(5) {
		secret := g.r.IntN(3) == 0
		k := plainKeys[g.r.IntN(len(plainKeys))]
		if secret {
			k = secretKeys[g.r.IntN(len(secretKeys))]
		}
		parts = append(parts, g.ws()+g.jsonString(k)+g.ws()+":"+g.ws()+g.value(depth, secret)+g.ws())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestRandomDocuments checks RedactJSON and Stream on random arguments:
// valid JSON stays valid with the same structure, no planted secret
// survives, RedactJSON is idempotent, and any split streams the same bytes.
func TestRandomDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 3000
	if testing.Short() {
		n = 300
	}
	planted := 0
	for range n {
		g := &docGen{r: r}
		in := g.ws() + g.object(0) + g.ws()
		if !json.Valid([]byte(in)) {
			t.Fatalf("generator produced invalid JSON: %q", in)
		}
		planted += len(g.planted)
		out, _ := RedactJSON(in)
		if !json.Valid([]byte(out)) {
			t.Fatalf("RedactJSON(%q) = %q; not valid JSON", in, out)
		}
		if shape(out) != shape(in) {
			t.Fatalf("RedactJSON(%q) = %q; structure changed", in, out)
		}
		var decoded any
		if err := json.Unmarshal([]byte(out), &decoded); err != nil {
			t.Fatal(err)
		}
		plain, _ := json.Marshal(decoded) // secrets hidden behind escapes, decoded
		for _, sec := range g.planted {
			if strings.Contains(out, sec) || strings.Contains(string(plain), strings.ReplaceAll(sec, "&", `\u0026`)) {
				t.Fatalf("RedactJSON(%q) = %q; still holds %q", in, out, sec)
			}
		}
		if again, _ := RedactJSON(out); again != out {
			t.Fatalf("RedactJSON(RedactJSON(%q)) = %q; want %q", in, again, out)
		}
		// Truncations are not valid JSON; they must stream alike too.
		for _, s := range []string{in, in[:r.IntN(len(in)+1)]} {
			want, _ := RedactJSON(s)
			if got := strings.Join(streamSplit(randomSplit(r, s)), ""); got != want {
				t.Fatalf("Stream(%q) = %q; want %q", s, got, want)
			}
		}
	}
	if planted < n {
		t.Fatalf("planted %d secrets in %d documents; the generator is not exercising the rules", planted, n)
	}
	t.Logf("%d documents, %d planted secrets", n, planted)
}
