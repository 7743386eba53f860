// Command turnstream runs LLM agent turns as a stream processor on NATS
// JetStream. Subcommands only parse flags and the environment and call into
// internal/; see `turnstream help`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/turnstream/turnstream/internal/logging"
)

func main() {
	ctx, stop := signalContext(os.Stderr)
	defer stop()
	if err := dispatch(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "turnstream:", err)
		os.Exit(1)
	}
}

// exitInterrupted is the exit status of a process ended by a second signal
// (128 + SIGINT, as shells report an interrupted command).
const exitInterrupted = 130

// signalContext is a context ended by the first SIGINT or SIGTERM, which
// starts a graceful stop (a worker drains); a second one exits at once,
// whatever the signals' disposition was when the process started.
func signalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		// The notices are for a person at a terminal; elsewhere stderr
		// holds JSON log lines only (the commands log their stop).
		human := logging.IsTerminal(stderr)
		if human {
			fmt.Fprintln(stderr, "turnstream: stopping (a second Ctrl-C exits at once)")
		}
		cancel()
		<-sigs
		if human {
			fmt.Fprintln(stderr, "turnstream: second signal: exiting at once")
		}
		os.Exit(exitInterrupted)
	}()
	return ctx, func() { cancel() }
}

// dispatch runs `turnstream args...`, printing to stdout (errors and logs go
// to stderr), until ctx ends.
func dispatch(ctx context.Context, args []string, stdout io.Writer) error {
	root := newRootCmd()
	root.SetOut(stdout)
	root.SetErr(os.Stderr)
	root.SetArgs(goFlagArgs(root, args))
	return root.ExecuteContext(ctx)
}

// newRootCmd is the command tree. Each subcommand declares its flags in its
// own constructor, in one place.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "turnstream",
		Short: "LLM agent turns as a stream processor on NATS JetStream",
		Long: `turnstream runs LLM agent turns as a stream processor on NATS JetStream.

Flags may come before or after arguments; "--" ends the flags (a prompt
that starts with "-" goes after it). NATS_URL works like --nats-url,
NATS_INBOX_PREFIX like --inbox-prefix.`,
		Version:       versionString(),
		SilenceErrors: true, // main prints them once
		SilenceUsage:  true, // a failed turn is no usage error
	}
	root.SetVersionTemplate("turnstream {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w (see `%s --help`)", cmd.Name(), err, cmd.CommandPath())
	})
	root.AddCommand(
		newDemoCmd(),
		newDevCmd(),
		newWorkerCmd(),
		newSubmitCmd(),
		newTapCmd(),
		newInspectCmd(),
		newCancelCmd(),
		newReplayCmd(),
		newToolsCmd(),
		newStreamsCmd(),
		newMockLLMCmd(),
		newProbeCmd(),
		newVersionCmd(),
	)
	return root
}

// goFlagArgs rewrites the single-dash long flags the standard flag package
// accepted (`-session s1`, `-latency=0s`) to pflag's double dash, for the
// flags of the command args run, so scripts written for the earlier CLI
// keep working. Arguments after "--" are left alone, and so is a word
// that names no flag of the command.
func goFlagArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && lookupFlag(cmd, name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}
