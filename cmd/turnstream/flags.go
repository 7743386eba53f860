package main

import (
	"fmt"
	"os"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/turnstream/turnstream/internal/logging"
)

// logFlags are the logging flags every command that logs takes.
type logFlags struct {
	level, format string
}

// addLogFlags registers --log-level, defaulting to level.
func addLogFlags(f *pflag.FlagSet, level string) *logFlags {
	l := &logFlags{}
	f.StringVar(&l.level, "log-level", level, "log level: debug, info, warn, error, disabled")
	f.StringVar(&l.format, "log-format", "", "log format on stderr: json or console (default: console on a terminal, else json)")
	return l
}

// logger is the logger the flags ask for, writing to stderr.
func (l *logFlags) logger() (zerolog.Logger, error) {
	log, err := logging.New(os.Stderr, logging.Options{Format: l.format, Level: l.level})
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("--log-level or --log-format: %w", err)
	}
	return log, nil
}
