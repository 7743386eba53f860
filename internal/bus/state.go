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
	if _, err := s.kv.Put(ctx, key, value); err != nil {
		return fmt.Errorf("bus: state %s: %w", key, sized(err))
	}
	return nil
}

// Get returns the value under key; ok is false when there is none.
func (s *State) Get(ctx context.Context, key string) (value []byte, ok bool, err error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bus: state %s: %w", key, err)
	}
	return e.Value(), true, nil
}

// Create stores value under key only if the key holds nothing (or was
// deleted). created is false when the key already had a value, which is
// then returned as existing.
func (s *State) Create(ctx context.Context, key string, value []byte) (created bool, existing []byte, err error) {
	if _, err := s.kv.Create(ctx, key, value); err == nil {
		return true, nil, nil
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil, fmt.Errorf("bus: state %s: %w", key, err)
	}
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// Deleted between the two calls: it is free again.
		return s.Create(ctx, key, value)
	}
	if err != nil {
		return false, nil, fmt.Errorf("bus: state %s: %w", key, err)
	}
	return false, e.Value(), nil
}

// Delete removes key; deleting a key that holds nothing is not an error.
func (s *State) Delete(ctx context.Context, key string) error {
	if err := s.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("bus: state %s: %w", key, err)
	}
	return nil
}

// Keys calls fn with each key matching filter (a subject-style pattern
// such as "=intake.>") until fn returns false or max keys were seen.
func (s *State) Keys(ctx context.Context, filter string, max int, fn func(key string) bool) error {
	l, err := s.kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil
		}
		return fmt.Errorf("bus: state keys %s: %w", filter, err)
	}
	defer l.Stop() //nolint:errcheck // stopping a finished lister
	n := 0
	for k := range l.Keys() {
		n++
		if !fn(k) || n >= max {
			return nil
		}
	}
	return nil
}
