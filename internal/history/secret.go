package history

import "github.com/turnstream/turnstream/internal/redact"

// containsSecret reports credential material in stored arguments (a turn
// stored before redaction, or a rule added since).
func containsSecret(s string) bool { return redact.Contains(s) }
