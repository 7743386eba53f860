package calltoken

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
)

// KeySize is the size in bytes of a fleet key.
const KeySize = 32

// version tags what a token is a MAC of, so that a token of another
// construction, or of another use of the same key, never verifies as one
// of these.
const version = "turnstream call token v1"

// TokenLen is the length of a token: the 32-byte MAC in unpadded base64url.
var TokenLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

// ErrBadKey means a key is not KeySize bytes, or its text is not their
// unpadded base64url.
var ErrBadKey = fmt.Errorf("calltoken: a key must be %d bytes (as text, in unpadded base64url)", KeySize)

// Key is a fleet key. The zero Key is not a key: it signs nothing (Sign
// returns "") and verifies nothing. A Key never prints its secret.
type Key struct {
	secret []byte
}

// NewKey makes a Key of secret, which must be KeySize bytes. It keeps a
// copy.
func NewKey(secret []byte) (Key, error) {
	if len(secret) != KeySize {
		return Key{}, ErrBadKey
	}
	return Key{secret: append([]byte(nil), secret...)}, nil
}

// NewSecret returns KeySize random bytes for a new fleet key.
func NewSecret() ([]byte, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("calltoken: random key: %w", err)
	}
	return b, nil
}

// EncodeSecret is the text form of a key's secret: unpadded base64url.
func EncodeSecret(secret []byte) string { return base64.RawURLEncoding.EncodeToString(secret) }

// ParseKey reads a key in its text form (EncodeSecret).
func ParseKey(text string) (Key, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil {
		return Key{}, ErrBadKey
	}
	return NewKey(b)
}

// IsZero reports whether k is the zero Key.
func (k Key) IsZero() bool { return len(k.secret) == 0 }

// String hides the secret.
func (k Key) String() string {
	if k.IsZero() {
		return "calltoken.Key(none)"
	}
	return "calltoken.Key(redacted)"
}

// GoString hides the secret from %#v.
func (k Key) GoString() string { return k.String() }

// Sign returns the token of the call (session, turn, callID) to tool: the
// HMAC-SHA256 under k of the version tag and the four values, each
// prefixed by its length (4 bytes, big-endian), so that no two calls share
// an input whatever bytes their values hold; in unpadded base64url
// (TokenLen characters). The zero Key signs nothing: "".
func (k Key) Sign(session, turn, callID, tool string) string {
	if k.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(k.mac(session, turn, callID, tool))
}

// Verify reports whether token is the token of the call (session, turn,
// callID) to tool. It compares in constant time (hmac.Equal).
func (k Key) Verify(token, session, turn, callID, tool string) bool {
	if k.IsZero() || len(token) != TokenLen {
		return false
	}
	want := k.Sign(session, turn, callID, tool)
	return hmac.Equal([]byte(token), []byte(want))
}

func (k Key) mac(fields ...string) []byte {
	m := hmac.New(sha256.New, k.secret)
	write(m, version)
	for _, f := range fields {
		write(m, f)
	}
	return m.Sum(nil)
}

func write(h hash.Hash, s string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
