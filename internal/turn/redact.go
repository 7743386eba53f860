package turn

import "regexp"

// secretText is a stand-in until internal/redact lands.
var secretText = regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}|Bearer [A-Za-z0-9._~+/=-]{16,}`)

// redactArgs returns arguments with credential material replaced.
func redactArgs(args string) (string, bool) {
	out := secretText.ReplaceAllString(args, "[REDACTED]")
	return out, out != args
}
