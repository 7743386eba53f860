// Package redact detects credential material in text and replaces it with
// the fixed marker "[REDACTED]". It serves two places of the turn loop:
// finalization, where tool-call arguments that hold a credential are stored
// redacted (never faithfully) and their whole turn is marked unsafe for
// native replay; and the relay of streamed tool-call argument deltas, where
// a Stream makes sure no credential reaches a public chunk delta, however
// the provider splits it.
//
// Redact and Contains work on any text; RedactJSON works on a tool call's
// JSON arguments and keeps their structure byte for byte; Stream is
// RedactJSON applied incrementally, with identical output. The rules are
// listed in rules.go and rule_keyvalue.go, each with the guard that keeps
// ordinary prose and short values from being flagged.
//
// Every rule costs time linear in the length of its text (sorting the
// findings aside), however the text repeats what a rule looks for: tool
// results and arguments come from sources that may be hostile. The tests
// hold the rules to it by counting their work (linear_test.go).
//
// The package is a leaf: it imports only the standard library, keeps no
// global state beyond its compiled patterns, and never logs. It must never
// return a credential it detected, and never change text it did not flag.
package redact
