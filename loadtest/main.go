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
)

func main() {
	if os.Getenv(childNATSEnv) != "" {
		os.Exit(childWorker()) // a worker process of a --hostile run
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errIncomplete):
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// errIncomplete reports a run in which some turns did not complete; the
// report says which and why.
var errIncomplete = errors.New("loadtest: not every turn completed")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	f.SetOutput(stderr)
	var o Options
	f.StringVar(&o.NATSURL, "nats-url", "", "a running server with a worker and a provider (default: start the embedded stack)")
	f.IntVar(&o.Turns, "turns", defaultTurns, "turns to submit")
	f.IntVar(&o.Concurrency, "concurrency", defaultConcurrency, "turns in flight at once")
	f.BoolVar(&o.Tools, "tools", false, "offer the demo tools get_time and calculate (two steps per turn)")
	f.DurationVar(&o.MockLatency, "latency", 0, "embedded mock provider's delay before each streamed frame")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", defaultTurnTimeout, "bound of one turn, submit to terminal event")
	hostileRun := f.Bool("hostile", false, "run the bounded-memory check instead: a worker process takes hostile requests, provider floods and huge tool results among valid turns")
	var ho HostileOptions
	f.IntVar(&ho.Senders, "hostile-senders", 64, "--hostile: hostile ~1 MB requests in flight at once")
	f.IntVar(&ho.Rounds, "hostile-rounds", 4, "--hostile: requests each sender sends")
	f.IntVar(&ho.Floods, "hostile-floods", 14, "--hostile: turns answered with a provider flood (each kind in turn)")
	f.Int64Var(&ho.FloodBytes, "flood-bytes", 256<<20, "--hostile: size of each provider flood")
	f.IntVar(&ho.Heavy, "hostile-heavy", 16, "--hostile: turns offering the costliest schema within the limits")
	f.IntVar(&ho.BigResults, "hostile-big-results", 16, "--hostile: turns whose tool returns 2 MiB")
	f.IntVar(&ho.Valid, "hostile-valid", 64, "--hostile: valid turns in each phase")
	rssMiB := f.Int64("rss-bound-mib", 512, "--hostile: the worker's allowed peak RSS")
	baseline := f.Bool("baseline", true, "also measure raw JetStream publish and consume on the same server")
	jsonPath := f.String("json", "", "also write the report as JSON to this file")
	logLevel := f.String("log-level", "error", "embedded stack log level (debug, info, warn, error, disabled)")
	f.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./loadtest [flags]\n\nSubmits turns to turnstream and reports throughput and latency next to raw JetStream.\n\n")
		f.PrintDefaults()
	}
	if err := f.Parse(args); err != nil {
		return err
	}
	// Zero means "default" in Options; on the command line it is a mistake.
	if o.Turns < 1 || o.Concurrency < 1 || o.TurnTimeout <= 0 {
		return fmt.Errorf("loadtest: --turns, --concurrency and --turn-timeout must be positive")
	}
	if f.NArg() > 0 {
		f.Usage()
		return fmt.Errorf("loadtest: unexpected arguments %q", f.Args())
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("loadtest: --log-level: %w", err)
	}
	o.SkipBaseline = !*baseline
	o.Log = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).Level(level).With().Timestamp().Logger()

	if *hostileRun {
		for _, v := range []*int{&ho.Senders, &ho.Rounds, &ho.Floods, &ho.Heavy, &ho.BigResults, &ho.Valid} {
			switch {
			case *v < 0:
				return fmt.Errorf("loadtest: hostile counts cannot be negative")
			case *v == 0:
				*v = -1 // none, where HostileOptions reads 0 as its default
			}
		}
		ho.RSSBound, ho.TurnTimeout, ho.Log = *rssMiB<<20, o.TurnTimeout, o.Log
		hrep, err := RunHostile(ctx, ho)
		if hrep != nil {
			if werr := hrep.WriteText(stdout); werr != nil {
				return werr
			}
			if *jsonPath != "" {
				if werr := writeJSON(*jsonPath, hrep); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return err
		}
		if !hrep.OK() {
			return errIncomplete
		}
		return nil
	}
	rep, runErr := Run(ctx, o)
	if rep == nil {
		return runErr
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if *jsonPath != "" {
		if err := writeJSON(*jsonPath, rep); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if rep.Turns.Completed != rep.Config.Turns {
		return errIncomplete
	}
	return nil
}

func writeJSON(path string, rep interface{ WriteJSON(io.Writer) error }) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("loadtest: --json: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("loadtest: --json: %w", cerr)
		}
	}()
	if err := rep.WriteJSON(f); err != nil {
		return fmt.Errorf("loadtest: --json: %w", err)
	}
	return nil
}
