package turn

import (
	"crypto/sha256"
	"fmt"
	"regexp"
)

// usableCallID is what every destination accepts as-is: OpenAI allows up to
// 40 characters of this set.
var usableCallID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NormalizeCallID is the one stable helper that gives a finalized tool call
// its normalized id, right after finalization: the provider's id when it is
// usable and not already taken in the session, otherwise an id derived
// deterministically from the call's position (session, turn, step, index),
// so a redelivered step derives the same id again. taken is updated.
func NormalizeCallID(providerID, session, turn string, step, index int, taken map[string]bool) string {
	if usableCallID.MatchString(providerID) && !taken[providerID] {
		taken[providerID] = true
		return providerID
	}
	for salt := 0; ; salt++ {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%d\x00%d", session, turn, step, index, salt))
		id := make([]byte, 0, 24)
		id = append(id, "call_"...)
		for _, b := range sum[:19] {
			id = append(id, base62[int(b)%len(base62)])
		}
		if s := string(id); !taken[s] {
			taken[s] = true
			return s
		}
	}
}
