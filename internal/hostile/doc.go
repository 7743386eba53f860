// Package hostile builds the inputs an attacker sends a turnstream worker:
// turn requests that bomb its decoder and schema compiler, and provider
// scripts that flood its streams. The hostile-input tests and the
// bounded-memory load run (loadtest --hostile) both take their cases from
// here, each with the outcome the worker must give it.
//
// It only builds inputs; it sends nothing and runs nothing.
package hostile
