package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// CancelKey is the TURN_STATE key of a session's stored cancels: the turns
// of the session a client asked to cancel by id, kept until a delivery of
// each honors it. Its last token is one no turn id can be ("=" is not a
// subject-token character), so it never collides with a turn's keys.
func CancelKey(session string) string { return session + ".=cancel" }

// MaxStoredCancels bounds the cancels stored for one session: storing one
// more forgets the oldest. A cancel of a turn that already ended is never
// honored (and never removed by a delivery): the bound is what keeps such
// cancels from piling up. At most 32 turn ids of 128 bytes: a value of
// about 4 KiB.
const MaxStoredCancels = 32

// maxCancelRaces bounds the compare-and-set rounds of one edit of a
// session's stored cancels. Every worker stores every cancel, so the
// workers race on the key; a round is lost only to a write that changed
// it, and once one stored the turn the others find it and write nothing.
const maxCancelRaces = 16

// ErrCancelContended: the session's stored cancels kept changing under an
// edit (more than maxCancelRaces other writes in between).
var ErrCancelContended = errors.New("bus: stored cancels contended")

var errCancelTokens = errors.New("bus: stored cancel: session and turn ids must be subject tokens")

// storedCancels is the value under CancelKey, oldest turn first.
type storedCancels struct {
	V     int      `json:"v"`
	Turns []string `json:"turns"`
}

// StoreCancel stores a cancel of session's turn, to be honored by the
// turn's next delivery (Cancelled). Storing a cancel already stored writes
// nothing. The write is unfenced: the worker that receives a cancel holds
// no lease of the session.
func (s *State) StoreCancel(ctx context.Context, session, turn string) error {
	if err := cancelTokens(session, turn); err != nil {
		return err
	}
	return s.editCancels(ctx, session, func(turns []string) ([]string, bool) {
		if slices.Contains(turns, turn) {
			return turns, false
		}
		turns = append(turns, turn)
		if n := len(turns) - MaxStoredCancels; n > 0 {
			turns = turns[n:]
		}
		return turns, true
	})
}

// Cancelled reports whether a cancel of session's turn is stored.
func (s *State) Cancelled(ctx context.Context, session, turn string) (bool, error) {
	if err := cancelTokens(session, turn); err != nil {
		return false, err
	}
	turns, _, err := s.readCancels(ctx, session)
	if err != nil {
		return false, err
	}
	return slices.Contains(turns, turn), nil
}

// ForgetCancel removes the stored cancel of session's turn, if any (the
// turn ended); the key is deleted once it holds none.
func (s *State) ForgetCancel(ctx context.Context, session, turn string) error {
	if err := cancelTokens(session, turn); err != nil {
		return err
	}
	return s.editCancels(ctx, session, func(turns []string) ([]string, bool) {
		i := slices.Index(turns, turn)
		if i < 0 {
			return turns, false
		}
		return slices.Delete(turns, i, i+1), true
	})
}

// cancelTokens checks that session and turn are subject tokens: a key is
// made of them, and a dot or a wildcard would name another key.
func cancelTokens(session, turn string) error {
	if !wire.ValidToken(session) || !wire.ValidToken(turn) {
		return errCancelTokens
	}
	return nil
}

// readCancels reads a session's stored cancels and the key's revision (0:
// none). A value that does not decode holds no cancel (the next store
// replaces it).
func (s *State) readCancels(ctx context.Context, session string) ([]string, uint64, error) {
	ctx, cancel := op(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, CancelKey(session))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bus: stored cancels of %s: %w", session, err)
	}
	var v storedCancels
	if json.Unmarshal(e.Value(), &v) != nil {
		return nil, e.Revision(), nil
	}
	return v.Turns, e.Revision(), nil
}

// editCancels applies edit to a session's stored cancels by compare-and-set
// on the key's revision, again from a fresh read when another write came
// first. edit reports whether it changed anything; an empty result deletes
// the key.
func (s *State) editCancels(ctx context.Context, session string, edit func([]string) ([]string, bool)) error {
	key := CancelKey(session)
	for range maxCancelRaces {
		turns, rev, err := s.readCancels(ctx, session)
		if err != nil {
			return err
		}
		next, changed := edit(turns)
		if !changed {
			return nil
		}
		if err := s.writeCancels(ctx, key, next, rev); err == nil {
			return nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongLastSequence(err) {
			return fmt.Errorf("bus: stored cancels of %s: %w", session, err)
		}
	}
	return fmt.Errorf("%w: %s", ErrCancelContended, session)
}

// writeCancels stores turns under key if it is still at revision rev (0:
// no value), or deletes it when turns is empty.
func (s *State) writeCancels(ctx context.Context, key string, turns []string, rev uint64) error {
	ctx, cancel := writeOp(ctx)
	defer cancel()
	if len(turns) == 0 {
		return s.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	}
	data, _ := json.Marshal(storedCancels{V: 1, Turns: turns}) // plain fields: cannot fail
	var err error
	if rev == 0 {
		_, err = s.kv.Create(ctx, key, data)
	} else {
		_, err = s.kv.Update(ctx, key, data, rev)
	}
	return err
}
