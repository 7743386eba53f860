package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
)

func TestClassifyHTTP(t *testing.T) {
	tests := []struct {
		name                string
		status              int
		code, typ, message  string
		want                provider.Class
		retryableNormalMode bool
	}{
		{
			name: "429 rate limit", status: 429, code: "rate_limit_exceeded", typ: "requests",
			message: "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
			want:    provider.ClassRateLimit, retryableNormalMode: true,
		},
		{name: "429 without body", status: 429, want: provider.ClassRateLimit, retryableNormalMode: true},
		{
			name: "429 insufficient quota", status: 429, code: "insufficient_quota", typ: "insufficient_quota",
			message: "You exceeded your current quota, please check your plan and billing details.",
			want:    provider.ClassQuota,
		},
		{
			name: "429 request too large", status: 429, code: "rate_limit_exceeded", typ: "tokens",
			message: "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000.",
			want:    provider.ClassTooLarge,
		},
		{name: "413", status: 413, want: provider.ClassTooLarge},
		{name: "402", status: 402, want: provider.ClassPayment},
		{name: "402 credits", status: 402, message: "Insufficient credits. Add more using https://openrouter.ai/credits", want: provider.ClassQuota},
		{name: "401", status: 401, code: "invalid_api_key", message: "Incorrect API key provided", want: provider.ClassAuth},
		{name: "403", status: 403, message: "Forbidden", want: provider.ClassAuth},
		{name: "500", status: 500, want: provider.ClassServer, retryableNormalMode: true},
		{name: "502", status: 502, want: provider.ClassServer, retryableNormalMode: true},
		{name: "503 overloaded", status: 503, typ: "overloaded_error", message: "Overloaded", want: provider.ClassServer, retryableNormalMode: true},
		{name: "529", status: 529, want: provider.ClassServer, retryableNormalMode: true},
		{name: "504", status: 504, want: provider.ClassTimeout, retryableNormalMode: true},
		{name: "408", status: 408, want: provider.ClassTimeout, retryableNormalMode: true},
		{name: "400", status: 400, code: "invalid_value", message: "Invalid value for 'messages'", want: provider.ClassInvalidRequest},
		{name: "400 context length", status: 400, code: "context_length_exceeded", want: provider.ClassInvalidRequest},
		{name: "404 model", status: 404, code: "model_not_found", want: provider.ClassInvalidRequest},
		{name: "422", status: 422, want: provider.ClassInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := provider.ClassifyHTTP(tt.status, tt.code, tt.typ, tt.message)
			if got != tt.want {
				t.Errorf("ClassifyHTTP(%d, %q, %q, %q) = %s; want %s", tt.status, tt.code, tt.typ, tt.message, got, tt.want)
			}
			if r := provider.DefaultRetryPolicy.Retryable(got); r != tt.retryableNormalMode {
				t.Errorf("Retryable(%s) = %v; want %v", got, r, tt.retryableNormalMode)
			}
		})
	}
}

func TestClassifyInBand(t *testing.T) {
	tests := []struct {
		name               string
		code, typ, message string
		want               provider.Class
	}{
		{"rate limit code", "rate_limit_exceeded", "", "Rate limit reached. Please try again in 1.1s.", provider.ClassRateLimit},
		{"rate limit words", "", "", "rate limit hit", provider.ClassRateLimit},
		{"numeric 429", "429", "", "slow down", provider.ClassRateLimit},
		{"too many requests", "", "", "Too Many Requests", provider.ClassRateLimit},
		{"insufficient quota", "insufficient_quota", "insufficient_quota", "You exceeded your current quota", provider.ClassQuota},
		{"credits", "402", "", "Insufficient credits", provider.ClassQuota},
		{
			"request too large under a rate limit code", "rate_limit_exceeded", "tokens",
			"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000.",
			provider.ClassTooLarge,
		},
		{"context length", "context_length_exceeded", "invalid_request_error", "too long", provider.ClassInvalidRequest},
		{"auth", "", "authentication_error", "bad key", provider.ClassAuth},
		{"server error", "server_error", "", "The server had an error", provider.ClassServer},
		{"nothing recognizable", "", "", "", provider.ClassServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.ClassifyInBand(tt.code, tt.typ, tt.message); got != tt.want {
				t.Errorf("ClassifyInBand(%q, %q, %q) = %s; want %s", tt.code, tt.typ, tt.message, got, tt.want)
			}
		})
	}
}

func TestAsFailure(t *testing.T) {
	classified := provider.Fail(provider.ClassAuth, "bad key", nil)
	tests := []struct {
		name string
		err  error
		want provider.Class
	}{
		{"classified", classified, provider.ClassAuth},
		{"wrapped classified", fmt.Errorf("outer: %w", classified), provider.ClassAuth},
		{"cancelled", context.Canceled, provider.ClassCancelled},
		{"wrapped cancelled", fmt.Errorf("x: %w", context.Canceled), provider.ClassCancelled},
		{"deadline", context.DeadlineExceeded, provider.ClassTimeout},
		{"anything else", errors.New("connection reset"), provider.ClassTransport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := provider.AsFailure(tt.err)
			if f == nil || f.Class != tt.want {
				t.Fatalf("AsFailure(%v) = %v; want class %s", tt.err, f, tt.want)
			}
			if !errors.Is(f, tt.err) && !errors.Is(tt.err, f) {
				t.Errorf("AsFailure(%v) does not wrap its cause", tt.err)
			}
		})
	}
	if f := provider.AsFailure(nil); f != nil {
		t.Errorf("AsFailure(nil) = %v; want nil", f)
	}
}

func TestFailureError(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		name string
		f    *provider.Failure
		want string
	}{
		{"class only", &provider.Failure{Class: provider.ClassServer}, "provider: SERVER"},
		{"status and reason", &provider.Failure{Class: provider.ClassRateLimit, Status: http.StatusTooManyRequests, Reason: "slow down"}, "provider: RATE_LIMIT (HTTP 429): slow down"},
		{"from Fail", provider.Fail(provider.ClassTransport, "reset", cause), "provider: TRANSPORT: reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Error(); got != tt.want {
				t.Errorf("Error() = %q; want %q", got, tt.want)
			}
		})
	}
	if f := provider.Fail(provider.ClassTransport, "reset", cause); !errors.Is(f, cause) {
		t.Errorf("errors.Is(Fail(..., cause), cause) = false; want true")
	}
}
