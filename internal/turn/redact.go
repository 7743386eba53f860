package turn

import "github.com/turnstream/turnstream/internal/redact"

// redactArgs returns tool-call arguments with credential material replaced.
func redactArgs(args string) (string, bool) { return redact.RedactJSON(args) }
