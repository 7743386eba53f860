// Package logging builds a command's logger (zerolog): JSON, one object a
// line, unless the output is a terminal, where it is console text with
// colour. --log-format chooses either; console text written anywhere but a
// terminal has no colour codes, so a file or a log collector never gets
// escape sequences.
//
// It must not decide what is logged or at which level: the packages that
// log do.
package logging
