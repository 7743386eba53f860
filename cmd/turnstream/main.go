// Command turnstream runs LLM agent turns as a stream processor on NATS
// JetStream. Subcommands only parse flags and the environment and call into
// internal/; see `turnstream help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/logging"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, out io.Writer) error
}

var commands = []command{
	{"demo", "run one turn end to end on an embedded stack and print it streaming", runDemo},
	{"dev", "run the embedded stack (NATS, mock provider, worker, demo tools) for other clients", runDev},
	{"worker", "run a production worker against a NATS server", runWorker},
	{"submit", "submit a turn and stream its answer", runSubmit},
	{"tap", "print session events live", runTap},
	{"replay", "re-run a recorded turn offline from its raw provider frames and report divergence", runReplay},
	{"tools", "serve the demo tools, or the tools of MCP servers (--mcp), against a NATS server", runTools},
	{"streams", "create or update the streams and consumers", runStreams},
	{"mockllm", "run the mock OpenAI-compatible provider alone", runMockLLM},
	{"probe", "GET URLs and fail unless each answers 2xx: the health check of the container image", runProbe},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal starts a graceful drain; from then on the
		// signals are no longer caught, so a second one exits at once.
		<-ctx.Done()
		stop()
	}()
	if err := dispatch(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "turnstream:", err)
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	usage(os.Stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: turnstream <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `turnstream <command> -h` for a command's flags. NATS_URL works like --nats-url, NATS_INBOX_PREFIX like --inbox-prefix.")
}

// flags is a command's flag set with the shared logging flags.
type flags struct {
	*flag.FlagSet
	logLevel, logFormat *string
}

func newFlags(name, usageLine string, defaultLevel string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: turnstream %s %s\n\n", name, usageLine)
		fs.PrintDefaults()
	}
	return &flags{
		FlagSet:   fs,
		logLevel:  fs.String("log-level", defaultLevel, "log level: debug, info, warn, error, disabled"),
		logFormat: fs.String("log-format", "", "log format on stderr: json or console (default: console on a terminal, else json)"),
	}
}

// logger is the logger the flags ask for, on stderr.
func (f *flags) logger() (zerolog.Logger, error) {
	log, err := logging.New(os.Stderr, logging.Options{Format: *f.logFormat, Level: *f.logLevel})
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("--log-level or --log-format: %w", err)
	}
	return log, nil
}
