package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnstream/turnstream/internal/assemble"
)

// Class is the coarse failure class of a provider attempt.
type Class string

// Failure classes.
const (
	ClassRateLimit      Class = "RATE_LIMIT"
	ClassServer         Class = "SERVER"
	ClassTimeout        Class = "TIMEOUT"
	ClassTransport      Class = "TRANSPORT"
	ClassMalformed      Class = "MALFORMED_RESPONSE"
	ClassStreamClosed   Class = "STREAM_CLOSED"
	ClassEmpty          Class = "EMPTY_RESPONSE"
	ClassAuth           Class = "AUTH"
	ClassQuota          Class = "QUOTA"
	ClassPayment        Class = "PAYMENT"
	ClassTooLarge       Class = "REQUEST_TOO_LARGE"
	ClassInvalidRequest Class = "INVALID_REQUEST"
	ClassProvider       Class = "PROVIDER_ERROR"
	ClassCancelled      Class = "CANCELLED"
	ClassNoRoute        Class = "NO_ROUTE"
	ClassUnsupported    Class = "UNSUPPORTED"
	ClassDeprecated     Class = "DEPRECATED_PROVIDER"
	ClassInvalidCall    Class = "INVALID_PREPARED_CALL"
	ClassIncomplete     Class = "INCOMPLETE_RESPONSE"
	// ClassResponseTooLarge: the answer crossed one of the attempt's
	// Limits (its Reason names which, one of the Limit constants). It is
	// never retried on the same target, in any retry mode; the chain falls
	// back to the next target, as for MALFORMED_RESPONSE.
	ClassResponseTooLarge Class = "RESPONSE_TOO_LARGE"
	// ClassCursorLost: the provider no longer has the response a request
	// continued from. It ends the chain: the turn decides (replay, or fail
	// when tool results were waiting on the cursor).
	ClassCursorLost Class = "CURSOR_LOST"
)

// Failure is a classified provider failure. Its fields are a serializable
// snapshot safe for events and logs: never a raw body or a header that can
// hold a key.
type Failure struct {
	Class Class
	// Status is the HTTP status, 0 if none.
	Status int
	// RetryAfter is the provider's delay hint, 0 if none.
	RetryAfter time.Duration
	// RequestID is the provider's request id, if it sent one.
	RequestID string
	// Reason is a short, content-free description.
	Reason string
	err    error
}

func (f *Failure) Error() string {
	s := "provider: " + string(f.Class)
	if f.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", f.Status)
	}
	if f.Reason != "" {
		s += ": " + f.Reason
	}
	return s
}

// Snapshot is the serializable, content-free view of a Failure: what
// results, events and logs may carry.
type Snapshot struct {
	Class        Class  `json:"class"`
	HTTPStatus   int    `json:"http_status,omitempty"`
	RetryAfterMS int64  `json:"provider_delay_ms,omitempty"`
	RequestID    string `json:"request_id,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// Snapshot returns f's serializable snapshot.
func (f *Failure) Snapshot() Snapshot {
	return Snapshot{Class: f.Class, HTTPStatus: f.Status, RetryAfterMS: f.RetryAfter.Milliseconds(), RequestID: f.RequestID, Reason: f.Reason}
}

// Unwrap returns the underlying error, if any.
func (f *Failure) Unwrap() error { return f.err }

// Fail builds a Failure of class c wrapping err.
func Fail(c Class, reason string, err error) *Failure {
	return &Failure{Class: c, Reason: reason, err: err}
}

// AsFailure returns err as a *Failure, classifying unclassified errors:
// an assembler's *assemble.LimitError is RESPONSE_TOO_LARGE with the
// limit's name as Reason, context cancellation CANCELLED, a deadline
// TIMEOUT, anything else TRANSPORT.
func AsFailure(err error) *Failure {
	if err == nil {
		return nil
	}
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	var lim *assemble.LimitError
	switch {
	case errors.As(err, &lim):
		return Fail(ClassResponseTooLarge, lim.Limit, err)
	case errors.Is(err, context.Canceled):
		return Fail(ClassCancelled, "cancelled", err)
	case errors.Is(err, context.DeadlineExceeded):
		return Fail(ClassTimeout, "deadline exceeded", err)
	}
	return Fail(ClassTransport, "transport error", err)
}
