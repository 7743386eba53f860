package history

import "regexp"

// credential is a stand-in until internal/redact lands.
var credential = regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}|Bearer [A-Za-z0-9._~+/=-]{16,}|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

func containsSecret(s string) bool { return credential.MatchString(s) }
