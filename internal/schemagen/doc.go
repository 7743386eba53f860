// Package schemagen generates the JSON Schemas of schemas/ that are derived
// from Go types: session_event.schema.json from wire.SessionEvent and the
// payload types (wire.EventPayloads), and config.schema.json from
// config.Config and the API descriptors of internal/provider/apis. Titles
// and descriptions come from the types' doc comments (the first paragraph
// of each), constraints from their jsonschema struct tags, and what a Go
// type cannot say (the API fragments, the generic payload rule) from this
// package.
//
// `go generate ./schemas` (go run ./schemas/gen) rewrites the files; a
// test of package schemas fails when they differ from what Generate
// produces. It reads the Go sources of pkg/wire and internal/config for
// their comments, so it runs in a checkout, never in a deployed binary.
package schemagen
