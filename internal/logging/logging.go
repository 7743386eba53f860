package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Formats of Options.Format.
const (
	// FormatJSON writes one JSON object a line (zerolog's own format).
	FormatJSON = "json"
	// FormatConsole writes text for people, in colour on a terminal.
	FormatConsole = "console"
)

// Options configure New.
type Options struct {
	// Format is FormatJSON or FormatConsole; "" chooses console on a
	// terminal and JSON anywhere else. Default "".
	Format string
	// Level is the least level logged: debug, info, warn, error or
	// disabled (case-insensitive). Default info.
	Level string
}

// New is the logger that writes to w as o says, every event with its
// time.
func New(w io.Writer, o Options) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if o.Level != "" {
		var err error
		if lvl, err = zerolog.ParseLevel(strings.ToLower(o.Level)); err != nil {
			return zerolog.Nop(), fmt.Errorf("logging: level %q: want debug, info, warn, error or disabled", o.Level)
		}
	}
	terminal := IsTerminal(w)
	format := strings.ToLower(o.Format)
	if format == "" {
		format = FormatJSON
		if terminal {
			format = FormatConsole
		}
	}
	switch format {
	case FormatJSON:
	case FormatConsole:
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !terminal}
	default:
		return zerolog.Nop(), fmt.Errorf("logging: format %q: want %s or %s", o.Format, FormatJSON, FormatConsole)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// IsTerminal reports whether w is a terminal (a character device such as
// a tty; a file, a pipe or a buffer is not).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
