package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
)

func main() {
	if code, ok := childMain(); ok {
		os.Exit(code) // a process of a --hostile or --profile run
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
	profile := f.String("profile", "", "measure issue 11's table instead, each part in its own process: quick (under 5 minutes on 2 cores) or full")
	rounds := f.Int("rounds", 0, "--profile: interleaved rounds of the timed legs (default: the profile's, quick 3, full 5)")
	frameLatency := f.Duration("frame-latency", 0, "--profile: the mock provider's delay before each streamed frame")
	sessionTurns := f.Int("session-turns", 0, "--profile: turns of the growth leg's session (default: the profile's, quick 200, full 1000)")
	inFlight := f.Int("in-flight", 0, "--profile: slow turns in flight at once in the memory leg (default: the profile's, quick 1000, full 10000)")
	followerSteps := f.String("follower-steps", "", "--profile: follower counts of the follower leg, comma-separated, tried in order (default: the profile's)")
	svgPath := f.String("svg", "", "--profile: also write a chart of latency percentiles and throughput per leg as SVG to this file")
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

	if *profile != "" {
		po, err := profileByName(*profile)
		if err != nil {
			return err
		}
		if o.NATSURL != "" {
			return errors.New("loadtest: --profile starts its own server and processes; it takes no --nats-url")
		}
		if *rounds < 0 || *frameLatency < 0 {
			return errors.New("loadtest: --rounds and --frame-latency must not be negative")
		}
		if *rounds > 0 {
			po.Rounds = *rounds
		}
		po.FrameLatency = *frameLatency
		if *inFlight < 0 || *sessionTurns < 0 {
			return errors.New("loadtest: --in-flight and --session-turns must not be negative")
		}
		if *sessionTurns > 0 {
			po.SessionTurns = *sessionTurns
		}
		if *inFlight > 0 {
			po.InFlight, po.FollowerSteps = *inFlight, nil
		}
		if *followerSteps != "" {
			po.FollowerSteps = nil
			for _, s := range strings.Split(*followerSteps, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < 1 {
					return fmt.Errorf("loadtest: --follower-steps %q: want positive counts, comma-separated", *followerSteps)
				}
				po.FollowerSteps = append(po.FollowerSteps, n)
			}
		}
		// Progress on stderr; --log-level debug adds each leg.
		po.Log = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).Level(min(level, zerolog.InfoLevel)).With().Timestamp().Logger()
		return runProfile(ctx, po, stdout, *jsonPath, *svgPath)
	}
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

// runProfile runs a profile and writes its reports.
func runProfile(ctx context.Context, o ProfileOptions, stdout io.Writer, jsonPath, svgPath string) error {
	rep, err := RunProfile(ctx, o)
	if rep == nil {
		return err
	}
	if err != nil {
		rep.finish() // what was measured so far
	}
	if werr := rep.WriteMarkdown(stdout); werr != nil {
		return werr
	}
	if jsonPath != "" {
		if werr := writeJSON(jsonPath, rep); werr != nil {
			return werr
		}
	}
	if svgPath != "" {
		if werr := writeFile(svgPath, "--svg", rep.WriteSVG); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errIncomplete
	}
	return nil
}

func writeJSON(path string, rep interface{ WriteJSON(io.Writer) error }) error {
	return writeFile(path, "--json", rep.WriteJSON)
}

// writeFile writes path with write; errors name the flag.
func writeFile(path, flagName string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("loadtest: %s: %w", flagName, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("loadtest: %s: %w", flagName, cerr)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("loadtest: %s: %w", flagName, err)
	}
	return nil
}
