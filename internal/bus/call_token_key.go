package bus

import (
	"context"
	"fmt"

	"github.com/turnstream/turnstream/internal/calltoken"
)

// CallTokenKeyKey is the TURN_STATE key of the fleet key, with which every
// worker signs the tokens of the tool calls it dispatches and verifies the
// tokens of the results it receives (internal/calltoken). It starts with
// "=", which no session token does, so no session's keys can collide with
// it, and no watch of session keys (LeaseKey("*")) sees it. Its value is
// the key's secret in unpadded base64url (calltoken.EncodeSecret).
//
// The key is fleet-wide: a turn resumed by another worker after a crash
// verifies the results of calls an earlier worker dispatched. It lives in
// TURN_STATE, which only workers may read, so clients and tool workers
// never see it. It is kept as long as the bucket keeps its keys
// (Topology.MessageMaxAge, default forever): a bucket with a max age would
// lose it, and the workers started after that would make a new one that
// the earlier ones do not know.
const CallTokenKeyKey = "=fleet.call-token-key"

// CallTokenKey returns the fleet key. The first worker to ask creates it:
// 32 random bytes, stored with a create that only the first writer wins,
// so every worker, however many start at once, gets the same key. Each
// worker reads it once, at start.
func (s *State) CallTokenKey(ctx context.Context) (calltoken.Key, error) {
	secret, err := calltoken.NewSecret()
	if err != nil {
		return calltoken.Key{}, err
	}
	created, _, existing, err := s.Create(ctx, CallTokenKeyKey, []byte(calltoken.EncodeSecret(secret)))
	if err != nil {
		return calltoken.Key{}, fmt.Errorf("bus: call-token key: %w", err)
	}
	if created {
		return calltoken.NewKey(secret)
	}
	k, err := calltoken.ParseKey(string(existing.Value))
	if err != nil {
		return calltoken.Key{}, fmt.Errorf("bus: call-token key %s in %s: %w", CallTokenKeyKey, StateBucket, err)
	}
	return k, nil
}
