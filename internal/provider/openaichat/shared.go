package openaichat

import (
	"io"
	"net/http"

	"github.com/turnstream/turnstream/internal/provider"
)

// This file holds what the other openai-go based adapters (responses)
// reuse from this one.

// Terminate wraps an SSE body so that a stream ending with a complete line
// but without the blank line that dispatches an SSE event still dispatches
// it; a stream that ends mid-line stays truncated.
func Terminate(rc io.ReadCloser) io.ReadCloser { return terminate(rc) }

// HTTPFailure classifies an HTTP error response (status >= 400) that
// openai-go returned as err: the class from the status and the error body's
// code, type and message (the message itself is not kept), with the
// request id and the provider's retry hint.
func HTTPFailure(res *http.Response, err error) *provider.Failure {
	return httpFailure(res, err)
}
