package provider

import (
	"net/http"
	"strings"
)

// IsCursorLoss reports whether an error says the provider no longer has
// the response a request continued from (the Responses API's
// previous_response_id): the code previous_response_not_found at any
// status, or, for an in-stream error (status 0), a 400 or a 404, a message
// saying the previous response or its id was not found or is invalid.
func IsCursorLoss(status int, code, message string) bool {
	if strings.EqualFold(code, "previous_response_not_found") {
		return true
	}
	switch status {
	case 0, http.StatusBadRequest, http.StatusNotFound:
	default:
		return false
	}
	msg := strings.ToLower(message)
	switch {
	case strings.Contains(msg, "previous response") && strings.Contains(msg, "not found"):
		return true
	case strings.Contains(msg, "previous_response_id") && (strings.Contains(msg, "not found") || strings.Contains(msg, "invalid")):
		return true
	}
	return false
}

// ClassifyHTTP classifies a failed HTTP response from its status and the
// provider's error code, type and message (matched case-insensitively; the
// message itself is not kept).
func ClassifyHTTP(status int, code, typ, message string) Class {
	text := strings.ToLower(code + " " + typ + " " + message)
	switch {
	case IsCursorLoss(status, code, message):
		return ClassCursorLost
	case strings.Contains(text, "insufficient_quota") || strings.Contains(text, "quota") && status == http.StatusTooManyRequests ||
		strings.Contains(text, "credit") || strings.Contains(text, "billing"):
		return ClassQuota
	case strings.Contains(text, "request too large") || strings.Contains(text, "request_too_large") || status == http.StatusRequestEntityTooLarge:
		return ClassTooLarge
	case status == http.StatusPaymentRequired:
		return ClassPayment
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ClassAuth
	case status == http.StatusTooManyRequests:
		return ClassRateLimit
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return ClassTimeout
	case status >= 500:
		return ClassServer
	}
	return ClassInvalidRequest
}

// ClassifyInBand classifies an error a provider sent inside a 200 stream.
// Without a recognizable code it is SERVER: the provider failed mid-answer.
func ClassifyInBand(code, typ, message string) Class {
	text := strings.ToLower(code + " " + typ + " " + message)
	switch {
	case IsCursorLoss(0, code, message):
		return ClassCursorLost
	case strings.Contains(text, "insufficient_quota") || strings.Contains(text, "quota") || strings.Contains(text, "credit"):
		return ClassQuota
	case strings.Contains(text, "request too large") || strings.Contains(text, "request_too_large"):
		// Before rate limits: OpenAI sends "Request too large" under the
		// rate_limit_exceeded code, and it is not retryable.
		return ClassTooLarge
	case strings.Contains(text, "rate_limit") || strings.Contains(text, "rate limit") || strings.Contains(text, "429") || strings.Contains(text, "too many requests"):
		return ClassRateLimit
	case strings.Contains(text, "context_length") || strings.Contains(text, "invalid_request") || strings.Contains(text, "invalid_prompt"):
		return ClassInvalidRequest
	case strings.Contains(text, "unauthorized") || strings.Contains(text, "authentication") || strings.Contains(text, "401"):
		return ClassAuth
	}
	return ClassServer
}
