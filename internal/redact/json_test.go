package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactJSON(t *testing.T) {
	pem := `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZWQyNTUxOQ\n-----END OPENSSH PRIVATE KEY-----\n`
	tests := []struct {
		name string
		in   string
		want string // "" means unchanged
	}{
		{
			name: "curl with bearer header",
			in:   `{"command":"curl -sS -H \"Authorization: Bearer ` + keyBearer + `\" https://api.example.com/v1/me","timeout":30}`,
			want: `{"command":"curl -sS -H \"Authorization: Bearer ` + R + `\" https://api.example.com/v1/me","timeout":30}`,
		},
		{
			name: "git clone with password",
			in:   `{"command": "git clone https://deploy:gh-pass-2024@git.example.com/team/app.git /src"}`,
			want: `{"command": "git clone https://deploy:` + R + `@git.example.com/team/app.git /src"}`,
		},
		{
			name: "export api key",
			in:   `{"command": "export OPENAI_API_KEY=` + keyOpenAI + ` && python run.py"}`,
			want: `{"command": "export OPENAI_API_KEY=` + R + ` && python run.py"}`,
		},
		{
			name: "env file written by a tool",
			in:   `{"path": ".env", "content": "APP_ENV=prod\nDATABASE_URL=postgres://app:p4ssw0rd-prod@db:5432/app\nSTRIPE_KEY=` + keyStripe + `\nLOG_LEVEL=info\n"}`,
			want: `{"path": ".env", "content": "APP_ENV=prod\nDATABASE_URL=postgres://app:` + R + `@db:5432/app\nSTRIPE_KEY=` + R + `\nLOG_LEVEL=info\n"}`,
		},
		{
			name: "pem block with escaped newlines",
			in:   `{"path": "/home/u/.ssh/id_ed25519", "content": "` + pem + `", "mode": 384}`,
			want: `{"path": "/home/u/.ssh/id_ed25519", "content": "-----BEGIN OPENSSH PRIVATE KEY-----\n` + R + `\n-----END OPENSSH PRIVATE KEY-----\n", "mode": 384}`,
		},
		{
			name: "secret keys in nested objects and arrays",
			in: `{
  "service": "db",
  "config": {"host": "db.internal", "port": 5432, "password": "` + keyPassword + `", "opts": [{"token": "abcd-1234-efgh"}, {"name": "x"}]},
  "headers": [["X-Api-Key", "k"], {"Authorization": "Bearer ` + keyBearer + `"}]
}`,
			want: `{
  "service": "db",
  "config": {"host": "db.internal", "port": 5432, "password": "` + R + `", "opts": [{"token": "` + R + `"}, {"name": "x"}]},
  "headers": [["X-Api-Key", "k"], {"Authorization": "Bearer ` + R + `"}]
}`,
		},
		{
			name: "secret number becomes a string",
			in:   `{"user": "bob", "password": 12345, "pin": 12}`,
			want: `{"user": "bob", "password": "` + R + `", "pin": 12}`,
		},
		{
			name: "array under a secret key",
			in:   `{"api_keys": ["abc", "d1e2f3g4h5", 98765, null], "apiKey": [["nested-secret-1"]]}`,
			want: `{"api_keys": ["abc", "d1e2f3g4h5", 98765, null], "apiKey": [["` + R + `"]]}`,
		},
		{
			name: "secret array elements",
			in:   `{"tokens": ["a1b2c3d4"], "token": ["a1b2c3d4", 98765, true, "ab"]}`,
			want: `{"tokens": ["a1b2c3d4"], "token": ["` + R + `", "` + R + `", true, "ab"]}`,
		},
		{
			name: "escapes outside the secret are kept",
			in:   `{"note": "caf\u00e9 \"quoted\" \/path", "secret": "p\u00e4ss\"w\\ord"}`,
			want: `{"note": "caf\u00e9 \"quoted\" \/path", "secret": "` + R + `"}`,
		},
		{
			name: "unicode-escaped key name",
			in:   `{"pass\u0077ord": "hunter2hunter2"}`,
			want: `{"pass\u0077ord": "` + R + `"}`,
		},
		{
			name: "escaped json inside a string",
			in:   `{"body": "{\"client_id\": \"abc\", \"client_secret\": \"s3cr3t-value\"}"}`,
			want: `{"body": "{\"client_id\": \"abc\", \"client_secret\": \"` + R + `\"}"}`,
		},
		{
			name: "jwt in a value",
			in:   `{"url": "https://x.example/cb#id_token=` + keyJWT + `"}`,
			want: `{"url": "https://x.example/cb#id_token=` + R + `"}`,
		},
		{
			name: "credential as a key",
			in:   `{"` + keyGitHub + `": 1}`,
			want: `{"` + R + `": 1}`,
		},
		{
			name: "top-level string",
			in:   `"` + keyAWSID + `"`,
			want: `"` + R + `"`,
		},
		{
			name: "argv flag then value",
			in:   `{"argv": ["psql", "--host", "db", "--password", "hunter2hunter2", "-c", "select 1"]}`,
			want: `{"argv": ["psql", "--host", "db", "--password", "` + R + `", "-c", "select 1"]}`,
		},
		{
			name: "env list name and value",
			in:   `{"env": [{"name": "DB_HOST", "value": "db.internal"}, {"name": "DB_PASSWORD", "value": "hunter2hunter2"}, {"value": "after-a-secret", "name": "X"}]}`,
			want: `{"env": [{"name": "DB_HOST", "value": "db.internal"}, {"name": "DB_PASSWORD", "value": "` + R + `"}, {"value": "after-a-secret", "name": "X"}]}`,
		},
		{name: "no secrets", in: `{"path": "README.md", "max_tokens": 1024, "token_count": 17, "password_reset": true, "list": [1, 2.5e3, -0.1, false, null, {}, []]}`},
		{name: "short and literal secret values", in: `{"password": "x", "token": null, "secret": true, "api_key": "", "passwd": 12}`},
		{name: "placeholders", in: `{"password": "${DB_PASSWORD}", "token": "<your-token>", "api_key": "****"}`},

		// Not JSON: redacted as text.
		{
			name: "not json at all",
			in:   `export GITHUB_TOKEN=` + keyGitHub,
			want: `export GITHUB_TOKEN=` + R,
		},
		{
			name: "trailing garbage",
			in:   `{"a": 1} password=hunter2hunter2`,
			want: `{"a": 1} password=` + R,
		},
		{
			name: "unquoted secret value",
			in:   `{"a": "b", "password": hunter2hunter2}`,
			want: `{"a": "b", "password": ` + R + `}`,
		},
		{
			name: "raw newline in a string",
			in:   "{\"script\": \"set -e\nexport API_KEY=" + keyOpenAILegacy + "\n\"}",
			want: "{\"script\": \"set -e\nexport API_KEY=" + R + "\n\"}",
		},
		{
			name: "truncated inside a secret value",
			in:   `{"cmd": "ls", "password": "hunter2hun`,
			want: `{"cmd": "ls", "password": "` + R,
		},
		{
			name: "truncated inside a token",
			in:   `{"cmd": "curl -H 'Authorization: Bearer ` + keyBearer[:20],
			want: `{"cmd": "curl -H 'Authorization: Bearer ` + R,
		},
		{
			name: "escape-hidden key in a broken member",
			in:   `{"\u0073k-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zZx9": sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zZx9Cv8Bn7Ml6Kj5H}`,
			want: `{"` + R + `": ` + R + `}`,
		},
		{
			name: "truncated secret number",
			in:   `{"password": 123456`,
			want: `{"password": "` + R + `"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			got, redacted := RedactJSON(tt.in)
			if got != want {
				t.Errorf("RedactJSON(%q) =\n%s\nwant\n%s", tt.in, got, want)
			}
			if redacted != (want != tt.in) {
				t.Errorf("RedactJSON(%q) redacted = %v; want %v", tt.in, redacted, want != tt.in)
			}
			if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
				t.Errorf("RedactJSON(%q) = %q; not valid JSON", tt.in, got)
			}
			if again, _ := RedactJSON(got); again != got {
				t.Errorf("RedactJSON(RedactJSON(%q)) = %q; want %q", tt.in, again, got)
			}
		})
	}
}

// skeleton returns a JSON text's bytes outside its strings, each string
// reduced to "" and each redacted number (now a string) reduced to "".
func skeleton(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\\':
			i++
		case in && c == '"':
			in = false
			b.WriteByte(c)
		case in:
		case c == '"':
			in = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func TestRedactJSONKeepsStructure(t *testing.T) {
	for _, in := range jsonCorpus() {
		if !json.Valid([]byte(in)) {
			t.Fatalf("corpus entry is not JSON: %q", in)
		}
		got, _ := RedactJSON(in)
		if !json.Valid([]byte(got)) {
			t.Errorf("RedactJSON(%q) = %q; not valid JSON", in, got)
			continue
		}
		if ks, gs := skeleton(t, in), skeleton(t, got); ks != gs {
			t.Errorf("RedactJSON(%q) = %q; structure %q, want %q", in, got, gs, ks)
		}
		for _, sec := range plantedSecrets {
			if strings.Contains(in, sec) && strings.Contains(got, sec) {
				t.Errorf("RedactJSON(%q) = %q; still holds %q", in, got, sec)
			}
		}
		var a, b any
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(got), &b); err != nil {
			t.Fatal(err)
		}
		if !sameShape(a, b) {
			t.Errorf("RedactJSON(%q) = %q; decoded shape differs", in, got)
		}
	}
}

// sameShape reports whether two decoded JSON values have the same keys in
// the same containers, strings standing in for anything redacted.
func sameShape(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok {
				return false
			}
			if !sameShape(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !sameShape(a[i], bs[i]) {
				return false
			}
		}
		return true
	case string:
		_, ok := b.(string)
		return ok
	case float64:
		if _, ok := b.(string); ok {
			return true
		}
		return a == b
	default:
		return a == b
	}
}

// jsonCorpus is realistic tool-call arguments holding planted secrets,
// each where it is detectable.
func jsonCorpus() []string {
	var out []string
	for _, sec := range plantedSecrets {
		out = append(out,
			`{"command": "export API_KEY=`+sec+` && ./deploy.sh", "cwd": "/srv/app"}`,
			`{"path": ".env", "content": "A=1\nSECRET=`+sec+`\nB=2\n"}`,
			`{"config": {"auth": {"token": "`+sec+`"}, "retries": 3}, "tags": ["a", "b"]}`,
			`[{"name": "k"}, {"password": "`+sec+`", "note": "rotated"}]`,
			`{"args": ["--api-key", "x", "--password", "`+sec+`"], "env": {"CLIENT_SECRET": "`+sec+`"}}`,
		)
		if !strings.Contains(sec, "/") && sec != keyBasic {
			out = append(out,
				`{"command":"curl -H \"Authorization: Bearer `+sec+`\" https://api.example.com"}`,
				`{"url": "https://user:`+sec+`@example.com/x", "method": "GET"}`,
			)
		}
	}
	for _, sec := range shapedSecrets {
		out = append(out,
			`{"note": "key is `+sec+`", "n": 1}`,
			`["`+sec+`", {"deep": [["`+sec+`"]]}]`,
		)
	}
	out = append(out,
		`{"content": "-----BEGIN RSA PRIVATE KEY-----\n`+strings.ReplaceAll(keyPEMBody, "\n", `\n`)+`\n-----END RSA PRIVATE KEY-----\n"}`,
		`{"password": "`+keyPassword+`", "n": [1, 2, {"secret": "98765"}]}`,
		` { "a" : [ 1 , 2 ] , "b" : { } , "c" : "" } `,
	)
	return out
}
