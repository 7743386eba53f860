package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// logFlags are the logging flags every command that logs takes.
type logFlags struct {
	level string
}

// addLogFlags registers --log-level, defaulting to level.
func addLogFlags(f *pflag.FlagSet, level string) *logFlags {
	l := &logFlags{}
	f.StringVar(&l.level, "log-level", level, "log level: debug, info, warn, error, disabled")
	return l
}

// logger is the logger the flags ask for, writing to stderr.
func (l *logFlags) logger() (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(l.level))
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("--log-level: %w", err)
	}
	out := zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}
