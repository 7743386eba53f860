package anthropic

import (
	"errors"

	"github.com/turnstream/turnstream/internal/provider"
)

// Errors Prepare wraps in an INVALID_REQUEST *provider.Failure.
var (
	// ErrRole: a message role Messages has no wire shape for.
	ErrRole = errors.New("anthropic: unknown message role")
	// ErrImageRole: an image on a message that is not the user's.
	ErrImageRole = errors.New("anthropic: images on a non-user message")
	// ErrImageSource: an image that is neither an http(s) URL nor a
	// base64 data URI of a type Messages takes (JPEG, PNG, GIF, WebP).
	ErrImageSource = errors.New("anthropic: unsupported image source")
	// ErrArguments: a tool call whose arguments are not a JSON object
	// (tool_use input must be one).
	ErrArguments = errors.New("anthropic: tool call arguments are not a JSON object")
)

// errorClasses are the classes of Anthropic's documented error types that
// provider.ClassifyInBand, reading any provider's error, leaves at its
// SERVER default. overloaded_error and api_error are SERVER: retried.
var errorClasses = map[string]provider.Class{
	"overloaded_error": provider.ClassServer,
	"api_error":        provider.ClassServer,
	"timeout_error":    provider.ClassTimeout,
	"permission_error": provider.ClassAuth,
	"billing_error":    provider.ClassQuota,
	"not_found_error":  provider.ClassInvalidRequest,
}

// inBandFailure classifies an error event (or an error body sent with a
// 2xx status): provider.ClassifyInBand from its type and message, refined
// by errorClasses where that found nothing recognizable, with the
// message's "try again in 1.2s" hint. The message itself is not kept.
func inBandFailure(e *errorEvent) *provider.Failure {
	typ, msg := e.Error.Type, e.Error.Message
	class := provider.ClassifyInBand("", typ, msg)
	if c, ok := errorClasses[typ]; ok && class == provider.ClassServer {
		class = c
	}
	f := provider.Fail(class, "provider error event", nil)
	f.RetryAfter = provider.RetryHint(nil, msg, timeNow())
	return f
}
