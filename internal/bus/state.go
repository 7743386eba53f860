package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// StateBucket is the worker-only key-value bucket of provider state: per
// step request facts, provider ids, and (for replay) what providers must
// be sent back. Clients never read it; it is never published elsewhere.
const StateBucket = "TURN_STATE"

// State is the worker-only provider state.
type State struct {
	kv jetstream.KeyValue
}

// State opens the state bucket of an ensured topology.
func (b *Bus) State(ctx context.Context) (*State, error) {
	kv, err := b.js.KeyValue(ctx, StateBucket)
	if err != nil {
		return nil, fmt.Errorf("bus: state bucket: %w", err)
	}
	return &State{kv: kv}, nil
}

// Put stores value under key. A value the server cannot take fails with
// wire.ErrRecordTooLarge: it would not fit on a redelivery either.
func (s *State) Put(ctx context.Context, key string, value []byte) error {
	ctx, cancel := writeOp(ctx)
	defer cancel()
	if _, err := s.kv.Put(ctx, key, value); err != nil {
		return fmt.Errorf("bus: state %s: %w", key, sized(err))
	}
	return nil
}

// Get returns the value under key; ok is false when there is none.
func (s *State) Get(ctx context.Context, key string) (value []byte, ok bool, err error) {
	ctx, cancel := op(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bus: state %s: %w", key, err)
	}
	return e.Value(), true, nil
}

// Entry is a value with its revision.
type Entry struct {
	Value    []byte
	Revision uint64
}

// Create stores value under key only if the key holds nothing (or was
// deleted), and returns its revision. created is false when the key
// already had a value, which is then returned as existing.
func (s *State) Create(ctx context.Context, key string, value []byte) (created bool, rev uint64, existing Entry, err error) {
	cctx, cancel := writeOp(ctx)
	defer cancel()
	rev, err = s.kv.Create(cctx, key, value)
	if err == nil {
		return true, rev, Entry{}, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, 0, Entry{}, fmt.Errorf("bus: state %s: %w", key, err)
	}
	e, err := s.kv.Get(cctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// Deleted between the two calls: it is free again.
		return s.Create(ctx, key, value)
	}
	if err != nil {
		return false, 0, Entry{}, fmt.Errorf("bus: state %s: %w", key, err)
	}
	return false, 0, Entry{Value: e.Value(), Revision: e.Revision()}, nil
}

// Update replaces the value under key if its revision is still rev, and
// returns the new revision; otherwise it fails with ErrFenced.
func (s *State) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	ctx, cancel := writeOp(ctx)
	defer cancel()
	next, err := s.kv.Update(ctx, key, value, rev)
	if err != nil {
		if isWrongLastSequence(err) {
			return 0, fmt.Errorf("%w: state %s changed", ErrFenced, key)
		}
		return 0, fmt.Errorf("bus: state %s: %w", key, sized(err))
	}
	return next, nil
}

// Delete removes key if its revision is still rev (any revision for 0);
// otherwise it fails with ErrFenced. Deleting a key that holds nothing is not an error.
func (s *State) Delete(ctx context.Context, key string, rev uint64) error {
	var opts []jetstream.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	ctx, cancel := writeOp(ctx)
	defer cancel()
	err := s.kv.Delete(ctx, key, opts...)
	switch {
	case err == nil, errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case isWrongLastSequence(err):
		return fmt.Errorf("%w: state %s changed", ErrFenced, key)
	}
	return fmt.Errorf("bus: state %s: %w", key, err)
}
