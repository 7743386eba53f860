package bus

import (
	"encoding/base64"

	"github.com/nats-io/nats.go/jetstream"
)

// ClaimsBucket is the key-value bucket in which tool workers claim tool
// calls before running them (pkg/toolworker), so that a redelivered call
// is answered from its recorded result instead of being run again. One key
// per call (ClaimKey); its value is the tool worker's claim record. Workers
// create it with the topology (Topology.Ensure); tool workers only use it.
const ClaimsBucket = "TURN_CLAIMS"

// ClaimsConfig is the claims bucket: one value per key (claims advance by
// compare-and-set on their revision, so no history is needed), kept as
// long as the tool results they answer with (ResultMaxAge), at most
// OpenMaxBytes in all.
func (t Topology) ClaimsConfig() jetstream.KeyValueConfig {
	t = t.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      ClaimsBucket,
		Description: "tool-call claims of the tool workers (exactly-once tool effects)",
		History:     1,
		TTL:         t.ResultMaxAge,
		MaxBytes:    t.OpenMaxBytes,
		Storage:     t.Storage,
		Replicas:    t.Replicas,
	}
}

// ClaimKey is the claims-bucket key of one call to tool:
// "<tool>.<session>.<turn>.<call>", where <call> is the call id in unpadded
// base64url (RFC 4648 §5, [A-Za-z0-9_-]). It starts with the tool's name so
// that NATS permissions can confine a tool worker's claims to its own tools
// ($KV.TURN_CLAIMS.<tool>.>). Tool names ([A-Za-z0-9_-]{1,64}), session and
// turn ids (subject tokens, [A-Za-z0-9_-]{1,128}) are valid key tokens as
// they are; a call id is any 1 to 128 bytes (wire.ToolCall.Validate), which
// may hold dots, wildcards, spaces or non-ASCII bytes that a key cannot, so
// it is always encoded, which also keeps the mapping one-to-one. A key is at
// most 64+1+128+1+128+1+171 = 494 bytes.
func ClaimKey(tool, session, turn, callID string) string {
	return tool + "." + session + "." + turn + "." + base64.RawURLEncoding.EncodeToString([]byte(callID))
}
