package openaiwire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
)

// errIdle is the cause an idle timeout cancels a request with.
var errIdle = errors.New("openaiwire: idle timeout")

// Watch is the idle clock and the limits of one request, whichever SDK
// sends it: openai-go here, anthropic-sdk-go in internal/provider/anthropic.
// The SDK sends the request under the context StartWatch returns; its
// answer becomes a Response (Answer), or its failure is classified (Failed).
type Watch struct {
	ctx     context.Context // the request's; cancelled with errIdle by the clock
	cancel  context.CancelCauseFunc
	idle    *time.Timer
	timeout time.Duration
	limits  provider.Limits
}

// StartWatch starts the idle clock of a request to be sent under ctx, and
// returns the context to send it with: the clock cancels it after timeout
// without progress (zero or less means DefaultIdleTimeout). The limits are
// provider.LimitsOf(ctx). The caller ends the watch with Answer, then the
// Response's Close, or with Failed.
func StartWatch(ctx context.Context, timeout time.Duration) (context.Context, *Watch) {
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	w := &Watch{timeout: timeout, limits: provider.LimitsOf(ctx)}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.idle = time.AfterFunc(timeout, func() { w.cancel(errIdle) })
	return w.ctx, w
}

// Limits are the attempt's limits.
func (w *Watch) Limits() provider.Limits { return w.limits }

// Answer is the Response for res, an answer whose headers arrived; the idle
// clock goes on with it.
func (w *Watch) Answer(res *http.Response) *Response {
	return &Response{
		HTTP:    res,
		idle:    w.idle,
		timeout: w.timeout,
		idled:   w.idled,
		cancel:  w.cancel,
		limits:  w.limits,
	}
}

// Failed classifies a request that got no answer, err being what the SDK
// returned and res what it had received, if anything, and ends the watch:
// TIMEOUT if the idle clock ran out, the caller's context as
// provider.AsFailure classifies it, TRANSPORT without an HTTP error
// status, and httpFailure's class (the SDK's error body read) with one.
func (w *Watch) Failed(res *http.Response, err error, httpFailure func(*http.Response, error) *provider.Failure) *provider.Failure {
	defer w.cancel(nil)
	defer w.idle.Stop()
	switch {
	case w.idled():
		return provider.Fail(provider.ClassTimeout, "no response before idle timeout", err)
	case w.ctx.Err() != nil:
		return provider.AsFailure(w.ctx.Err())
	case res == nil || res.StatusCode < 400:
		return provider.Fail(provider.ClassTransport, "request failed", err)
	}
	return httpFailure(res, err)
}

func (w *Watch) idled() bool { return errors.Is(context.Cause(w.ctx), errIdle) }

// errBodyTooLarge ends the reading of an error body past its limit.
var errBodyTooLarge = errors.New("openaiwire: error body too large")

// BoundErrorBody is an SDK middleware (openai-go's and anthropic-sdk-go's
// option.Middleware are the same function type) that makes the SDK read an
// HTTP error body (it reads it whole, to parse the error object) no
// further than max bytes: past them the read fails, and the failure is
// classified by its status alone.
func BoundErrorBody(max int) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil && res.StatusCode >= 400 && res.Body != nil {
			res.Body = &limitedBody{rc: res.Body, left: int64(max)}
		}
		return res, err
	}
}

// limitedBody reads at most left bytes of rc, then fails with
// errBodyTooLarge if more remain.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One more byte tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, err := l.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }
