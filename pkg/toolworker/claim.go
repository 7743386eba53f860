package toolworker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// States of a claim.
const (
	// claimRunning: a delivery holds the call and is running its handler
	// (or about to); it renews the claim every heartbeat.
	claimRunning = "running"
	// claimDone: the call's result is recorded; no delivery runs it again.
	claimDone = "done"
)

// claimRecord is the value of a call's key in the claims bucket
// (bus.ClaimKey), encoded as JSON. It only ever advances by compare-and-set
// on its revision: created by the first delivery, renewed by its holder's
// heartbeats, taken over by a later delivery that found it stale, and
// finally marked done with the result every later delivery answers with.
type claimRecord struct {
	// State is claimRunning or claimDone.
	State string `json:"state"`
	// Owner is the Serve (a process-unique id) whose delivery wrote it.
	Owner string `json:"owner"`
	// StreamSeq and Delivery identify that delivery: the call's sequence
	// in TURN_TOOLS and its delivery count.
	StreamSeq uint64 `json:"stream_seq"`
	Delivery  uint64 `json:"delivery"`
	// Attempt counts the holders: 1 for the first, one more per takeover.
	Attempt int `json:"attempt"`
	// HeartbeatMS is the holder's heartbeat interval in milliseconds: a
	// delivery that finds the claim running watches it for 2.5 of them
	// before it judges the holder dead.
	HeartbeatMS int64 `json:"heartbeat_ms"`
	// Beat counts the holder's heartbeats, so each renewal is a new value.
	Beat uint64 `json:"beat,omitempty"`
	// Result is the recorded result of a done claim.
	Result *claimResult `json:"result,omitempty"`
}

// claimResult is a done claim's result: exactly the fields the published
// ToolResult carries besides the call's identity and token (a delivery
// answering from the claim takes those from its call).
type claimResult struct {
	Content          string `json:"content"`
	IsError          bool   `json:"is_error,omitempty"`
	ContentTruncated bool   `json:"content_truncated,omitempty"`
	ContentBytes     int    `json:"content_bytes,omitempty"`
	Synthesized      bool   `json:"synthesized,omitempty"`
}

func recordResult(r wire.ToolResult) *claimResult {
	return &claimResult{
		Content: r.Content, IsError: r.IsError,
		ContentTruncated: r.ContentTruncated, ContentBytes: r.ContentBytes,
		Synthesized: r.Synthesized,
	}
}

// toolResult is the result a done claim answers call with, with the
// delivered call's token.
func (c *claimResult) toolResult(call wire.ToolCall) wire.ToolResult {
	res := resultOf(call)
	res.Content, res.IsError = c.Content, c.IsError
	res.ContentTruncated, res.ContentBytes = c.ContentTruncated, c.ContentBytes
	res.Synthesized = c.Synthesized
	return res
}

// sameHolder reports whether r and o were written by the same holder: the
// same delivery of the same Serve, at the same attempt.
func (r claimRecord) sameHolder(o claimRecord) bool {
	return r.Owner == o.Owner && r.StreamSeq == o.StreamSeq && r.Delivery == o.Delivery && r.Attempt == o.Attempt
}

func (r claimRecord) heartbeat() time.Duration {
	return time.Duration(r.HeartbeatMS) * time.Millisecond
}

// encodeClaim is the claim's value. wire.JSON does not HTML-escape, so a
// result's content costs the same in the claim as in a JSON result.
func encodeClaim(r claimRecord) ([]byte, error) { return wire.JSON.Marshal(&r) }

// decodeClaim reads a claim's value. A value that does not decode is
// reported as a running claim of unknown holder: the deliveries that find
// it judge it by whether it moves, and take it over if it does not.
func decodeClaim(data []byte) (claimRecord, bool) {
	var r claimRecord
	if err := wire.JSON.Unmarshal(data, &r); err != nil || (r.State != claimRunning && r.State != claimDone) ||
		(r.State == claimDone && r.Result == nil) {
		return claimRecord{State: claimRunning}, false
	}
	return r, true
}

// errClaimLost means the claim moved under its holder: another delivery
// took it over (or it was removed). The holder must not write a result.
var errClaimLost = errors.New("toolworker: claim taken over by another delivery")

// found is a claim as read from the bucket.
type found struct {
	rec claimRecord
	rev uint64
}

// held is a claim the delivery holds: the last value it wrote and that
// value's revision. Every write is a compare-and-set on rev.
type held struct {
	kv  jetstream.KeyValue
	key string
	rec claimRecord
	rev uint64
}

// maxClaimTries bounds the compare-and-set rounds of one claim operation.
const maxClaimTries = 3

// create claims key with rec. It returns the held claim, or, when another
// delivery already claimed the call, the claim it found. A create whose
// reply was lost is recognized by reading the key back.
func create(ctx context.Context, kv jetstream.KeyValue, key string, rec claimRecord) (*held, *found, error) {
	data, err := encodeClaim(rec)
	if err != nil {
		return nil, nil, err
	}
	for range maxClaimTries {
		rev, err := kv.Create(ctx, key, data)
		if err == nil {
			return &held{kv: kv, key: key, rec: rec, rev: rev}, nil, nil
		}
		e, gerr := kv.Get(ctx, key)
		if errors.Is(gerr, jetstream.ErrKeyNotFound) {
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // deleted in between: free again
			}
			return nil, nil, fmt.Errorf("toolworker: claim: %w", err)
		}
		if gerr != nil {
			return nil, nil, fmt.Errorf("toolworker: claim: %w", errors.Join(err, gerr))
		}
		got, _ := decodeClaim(e.Value())
		if got.sameHolder(rec) {
			// This create landed; its reply was lost.
			return &held{kv: kv, key: key, rec: rec, rev: e.Revision()}, nil, nil
		}
		return nil, &found{rec: got, rev: e.Revision()}, nil
	}
	return nil, nil, fmt.Errorf("toolworker: claim: the key kept changing")
}

// read returns the claim under key, nil if there is none.
func read(ctx context.Context, kv jetstream.KeyValue, key string) (*found, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("toolworker: claim: %w", err)
	}
	rec, _ := decodeClaim(e.Value())
	return &found{rec: rec, rev: e.Revision()}, nil
}

// takeover replaces the stale claim f under key with rec, by
// compare-and-set on f's revision. It fails with errClaimLost when the
// claim moved since f was read.
func takeover(ctx context.Context, kv jetstream.KeyValue, key string, f *found, rec claimRecord) (*held, error) {
	h := &held{kv: kv, key: key, rec: f.rec, rev: f.rev}
	if err := h.write(ctx, rec); err != nil {
		return nil, err
	}
	return h, nil
}

// write replaces the held claim with rec by compare-and-set. When the
// write fails or its reply is lost, the claim is read back: if the holder
// still holds it (the write landed, or an earlier one whose reply was lost
// did), the revision is adopted and the write completed; if another holder
// wrote it, or it is gone, the write fails with errClaimLost. Any other
// failure leaves h as it was and is returned: the caller may retry.
func (h *held) write(ctx context.Context, rec claimRecord) error {
	data, err := encodeClaim(rec)
	if err != nil {
		return err
	}
	for range maxClaimTries {
		rev, err := h.kv.Update(ctx, h.key, data, h.rev)
		if err == nil {
			h.rec, h.rev = rec, rev
			return nil
		}
		e, gerr := h.kv.Get(ctx, h.key)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			return errClaimLost
		case gerr != nil:
			return fmt.Errorf("toolworker: claim: %w", errors.Join(err, gerr))
		case bytes.Equal(e.Value(), data):
			h.rec, h.rev = rec, e.Revision() // landed; the reply was lost
			return nil
		}
		// rec names the holder: a renewal or a result keeps the
		// holder's identity, a takeover writes a new one.
		if got, _ := decodeClaim(e.Value()); !got.sameHolder(rec) {
			return errClaimLost
		}
		if e.Revision() == h.rev {
			// Nothing landed: a failure of the write itself.
			return fmt.Errorf("toolworker: claim: %w", err)
		}
		// An earlier write of this holder landed unseen: go on from it.
		h.rev = e.Revision()
	}
	return fmt.Errorf("toolworker: claim: the key kept changing")
}

// beat renews the held claim: a new value, so its revision moves.
func (h *held) beat(ctx context.Context) error {
	rec := h.rec
	rec.Beat++
	return h.write(ctx, rec)
}

// release deletes the held claim, so the call's next delivery runs it
// afresh, unless the claim moved.
func (h *held) release(ctx context.Context) error {
	err := h.kv.Delete(ctx, h.key, jetstream.LastRevision(h.rev))
	if err != nil {
		return fmt.Errorf("toolworker: claim release: %w", err)
	}
	return nil
}
