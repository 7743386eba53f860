package calltoken_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/turnstream/turnstream/internal/calltoken"
)

func key(t *testing.T, fill byte) calltoken.Key {
	t.Helper()
	k, err := calltoken.NewKey(bytes.Repeat([]byte{fill}, calltoken.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSignConstruction pins the construction, written out byte by byte:
// every worker of a fleet, whatever its version, must derive the same
// token for a call.
func TestSignConstruction(t *testing.T) {
	k := key(t, 7)
	var msg []byte
	for _, f := range []string{"turnstream call token v1", "s1", "t1", "call_1", "get_time"} {
		msg = append(msg, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
		msg = append(msg, f...)
	}
	m := hmac.New(sha256.New, bytes.Repeat([]byte{7}, calltoken.KeySize))
	m.Write(msg)
	want := base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	if got := k.Sign("s1", "t1", "call_1", "get_time"); got != want {
		t.Errorf("Sign(s1, t1, call_1, get_time) = %q; want %q", got, want)
	}
	if len(want) != calltoken.TokenLen {
		t.Errorf("TokenLen = %d; want %d", calltoken.TokenLen, len(want))
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(want) {
		t.Errorf("token %q; want unpadded base64url", want)
	}
}

func TestVerify(t *testing.T) {
	k := key(t, 1)
	tok := k.Sign("s1", "t1", "call_1", "a")
	tests := []struct {
		name                       string
		k                          calltoken.Key
		token, session, turn, call string
		tool                       string
		want                       bool
	}{
		{"the call", k, tok, "s1", "t1", "call_1", "a", true},
		{"another session", k, tok, "s2", "t1", "call_1", "a", false},
		{"another turn", k, tok, "s1", "t2", "call_1", "a", false},
		{"another call", k, tok, "s1", "t1", "call_2", "a", false},
		{"another tool", k, tok, "s1", "t1", "call_1", "b", false},
		{"another key", key(t, 2), tok, "s1", "t1", "call_1", "a", false},
		{"the zero key", calltoken.Key{}, tok, "s1", "t1", "call_1", "a", false},
		{"no token", k, "", "s1", "t1", "call_1", "a", false},
		{"a made-up token", k, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "s1", "t1", "call_1", "a", false},
		{"a truncated token", k, tok[:len(tok)-1], "s1", "t1", "call_1", "a", false},
		{"a token with a byte more", k, tok + "A", "s1", "t1", "call_1", "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.k.Verify(tt.token, tt.session, tt.turn, tt.call, tt.tool); got != tt.want {
				t.Errorf("Verify(%q, %s, %s, %s, %s) = %v; want %v", tt.token, tt.session, tt.turn, tt.call, tt.tool, got, tt.want)
			}
		})
	}
}

// TestSignBoundaries: values whose concatenations agree still get distinct
// tokens (the length prefixes), and so do values holding NUL bytes or dots.
func TestSignBoundaries(t *testing.T) {
	k := key(t, 3)
	calls := [][4]string{
		{"ab", "c", "d", "e"},
		{"a", "bc", "d", "e"},
		{"a", "b", "cd", "e"},
		{"a", "b", "c", "de"},
		{"a", "b", "c\x00d", "e"},
		{"a", "b", "c", "d\x00e"},
		{"a", "b", "c.d", "e"},
		{"a.b", "c", "d", "e"},
	}
	seen := map[string][4]string{}
	for _, c := range calls {
		tok := k.Sign(c[0], c[1], c[2], c[3])
		if prev, dup := seen[tok]; dup {
			t.Errorf("Sign(%q) = Sign(%q) = %q; want distinct tokens", c, prev, tok)
		}
		seen[tok] = c
	}
}

func TestKeys(t *testing.T) {
	if _, err := calltoken.NewKey(make([]byte, 31)); !errors.Is(err, calltoken.ErrBadKey) {
		t.Errorf("NewKey(31 bytes) = %v; want ErrBadKey", err)
	}
	if (calltoken.Key{}).Sign("s", "t", "c", "x") != "" {
		t.Error("zero Key signed a call; want \"\"")
	}
	a, err := calltoken.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := calltoken.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != calltoken.KeySize || bytes.Equal(a, b) {
		t.Fatalf("NewSecret() = %d bytes, twice the same %v; want %d random bytes", len(a), bytes.Equal(a, b), calltoken.KeySize)
	}
	text := calltoken.EncodeSecret(a)
	k, err := calltoken.ParseKey(text)
	if err != nil {
		t.Fatalf("ParseKey(EncodeSecret(secret)) = %v", err)
	}
	want, err := calltoken.NewKey(a)
	if err != nil {
		t.Fatal(err)
	}
	if k.Sign("s", "t", "c", "x") != want.Sign("s", "t", "c", "x") {
		t.Error("ParseKey(EncodeSecret(secret)) signs unlike NewKey(secret)")
	}
	for _, bad := range []string{"", "short", text + "=", text[:len(text)-1] + "!", calltoken.EncodeSecret(a[:16])} {
		if _, err := calltoken.ParseKey(bad); !errors.Is(err, calltoken.ErrBadKey) {
			t.Errorf("ParseKey(%q) = %v; want ErrBadKey", bad, err)
		}
	}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k)} {
		if bytes.Contains([]byte(s), []byte(text)) || bytes.Contains([]byte(s), a) {
			t.Errorf("a formatted Key shows its secret: %q", s)
		}
	}
}
