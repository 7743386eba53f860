package openaiwire

import (
	"errors"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/turnstream/turnstream/internal/provider"
)

// HTTPFailure classifies an HTTP error response (status >= 400) that
// openai-go returned as err: the class from the status and the error body's
// code, type and message (the message itself is not kept), with the
// status, the request id and the provider's retry hint read against now.
func HTTPFailure(res *http.Response, err error, now time.Time) *provider.Failure {
	var code, typ, msg string
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code, typ, msg = apiErr.Code, apiErr.Type, apiErr.Message
	}
	f := provider.Fail(provider.ClassifyHTTP(res.StatusCode, code, typ, msg), http.StatusText(res.StatusCode), err)
	f.Status = res.StatusCode
	f.RequestID = provider.RequestID(res.Header)
	f.RetryAfter = provider.RetryHint(res.Header, msg, now)
	return f
}
