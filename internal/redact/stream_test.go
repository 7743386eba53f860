package redact

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// streamSplit feeds in to a new Stream in the given fragments and returns
// every output.
func streamSplit(frags []string) []string {
	st := NewStream()
	outs := make([]string, 0, len(frags)+1)
	for _, f := range frags {
		outs = append(outs, st.Write(f))
	}
	return append(outs, st.Close())
}

// randomSplit cuts s at random byte offsets, empty fragments included.
func randomSplit(r *rand.Rand, s string) []string {
	var frags []string
	for len(s) > 0 {
		n := r.IntN(min(len(s), 12) + 1)
		if r.IntN(8) == 0 {
			n = r.IntN(len(s) + 1)
		}
		frags = append(frags, s[:n])
		s = s[n:]
	}
	return frags
}

// streamInputs is the JSON corpus plus inputs that are not valid JSON.
func streamInputs() []string {
	in := jsonCorpus()
	for _, sec := range shapedSecrets {
		in = append(in,
			`{"cmd": "echo `+sec+`", "n": 1`, // truncated
			`{"cmd": "echo `+sec,             // unterminated string
			"{\"cmd\": \"echo\n"+sec+"\"}",   // raw newline: not JSON
			`export TOKEN=`+sec,              // not JSON at all
			`{"a": 1} `+sec,                  // trailing text
			`{"k": `+sec+`}`,                 // unquoted value
		)
	}
	for _, sec := range contextSecrets {
		in = append(in,
			`{"password": "`+sec, // truncated inside a secret value
			`{"password": `+sec+`}`,
			`{"a": [1, 2], password: "`+sec+`"}`,
		)
	}
	return in
}

func TestStreamMatchesRedactJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, in := range streamInputs() {
		want, _ := RedactJSON(in)
		for _, sec := range plantedSecrets {
			if strings.Contains(in, sec) && strings.Contains(want, sec) {
				t.Errorf("RedactJSON(%q) = %q; still holds %q", in, want, sec)
			}
		}
		// Every single split point, then random splits.
		splits := make([][]string, 0, len(in)+200)
		for i := range len(in) + 1 {
			splits = append(splits, []string{in[:i], in[i:]})
		}
		for range 200 {
			splits = append(splits, randomSplit(r, in))
		}
		splits = append(splits, strings.Split(in, "")) // byte by byte
		for _, frags := range splits {
			outs := streamSplit(frags)
			if got := strings.Join(outs, ""); got != want {
				t.Fatalf("Stream(%q) = %q; want %q", frags, got, want)
			}
			for _, o := range outs {
				for _, sec := range plantedSecrets {
					if strings.Contains(in, sec) && strings.Contains(o, sec) {
						t.Fatalf("Stream(%q) emitted %q; holds %q", frags, o, sec)
					}
				}
			}
		}
	}
}

// TestStreamEmitsEarly checks that structure and complete members are not
// held back: a Stream is useful only if deltas keep flowing.
func TestStreamEmitsEarly(t *testing.T) {
	st := NewStream()
	steps := []struct{ in, want string }{
		{`{"path": "a.txt", "con`, `{"path": "a.txt", `},
		{`tent": "hello `, ``},
		{`world", "token": "` + keyBearer[:10], `"content": "hello world", `},
		{keyBearer[10:] + `", "n": [1, `, `"token": "` + R + `", "n": [1, `},
		{`2]}`, `2]}`},
	}
	for _, s := range steps {
		if got := st.Write(s.in); got != s.want {
			t.Fatalf("Write(%q) = %q; want %q", s.in, got, s.want)
		}
	}
	if got := st.Close(); got != "" {
		t.Errorf("Close() = %q; want \"\"", got)
	}
	if !st.Redacted() {
		t.Error("Redacted() = false; want true")
	}
	if got := st.Write(`{"x": 1}`); got != "" {
		t.Errorf("Write after Close = %q; want \"\"", got)
	}
	if got := st.Close(); got != "" {
		t.Errorf("second Close() = %q; want \"\"", got)
	}
}

func TestStreamInvalidJSONHeldUntilClose(t *testing.T) {
	st := NewStream()
	if got := st.Write(`{"a": 1, password: "hunt`); got != `{"a": 1, ` {
		t.Fatalf("Write = %q; want %q", got, `{"a": 1, `)
	}
	if got := st.Write(`er2hunter2"}`); got != "" {
		t.Fatalf("Write = %q; want \"\"", got)
	}
	if got, want := st.Close(), `password: "`+R+`"}`; got != want {
		t.Fatalf("Close() = %q; want %q", got, want)
	}
}

func TestStreamValidJSONStaysValid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, in := range jsonCorpus() {
		got := strings.Join(streamSplit(randomSplit(r, in)), "")
		if !json.Valid([]byte(got)) {
			t.Errorf("Stream(%q) = %q; not valid JSON", in, got)
		}
	}
}
