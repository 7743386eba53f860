package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	defaultPrompt = "What time is it, and what is 17 * 23?"
	demoSystem    = "You are a helpful assistant. Use the offered tools when they help."
)

// demoOptions are the flags of `turnstream demo`.
type demoOptions struct {
	log     *logFlags
	latency time.Duration
	events  bool
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [prompt]",
		Short: "run one turn end to end on an embedded stack and print it streaming",
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.log = addLogFlags(f, "warn")
	f.DurationVar(&o.latency, "latency", 15*time.Millisecond, "mock provider delay per streamed chunk")
	f.BoolVar(&o.events, "events", false, "also print every audit event of the turn")
	return cmd
}

func runDemo(ctx context.Context, o demoOptions, args []string, out io.Writer) error {
	log, err := o.log.logger()
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(args, " "))
	if prompt == "" {
		prompt = defaultPrompt
	}
	st, err := stack.Start(ctx, stack.Options{MockLatency: o.latency, Log: log})
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(out, "turnstream demo: embedded NATS at %s, mock provider at %s\n", st.NATSURL, st.MockURL)
	fmt.Fprintf(out, "> %s\n\n", prompt)

	c, err := client.New(st.Conn)
	if err != nil {
		return err
	}
	t, err := c.Submit(ctx, wire.TurnRequest{
		SessionID: "demo",
		Input:     []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}},
		System:    demoSystem,
		Tools:     demotools.Tools(),
	})
	if err != nil {
		return err
	}
	defer t.Close()
	p := console.NewTurnPrinter(out)
	p.Verbose = o.events
	return follow(ctx, t, p)
}

// follow prints a turn to its end and reports a turn that did not complete
// as an error.
func follow(ctx context.Context, t *client.Turn, p *console.TurnPrinter) error {
	terminal, err := console.Follow(ctx, t, p)
	if err != nil {
		return err
	}
	return completed(terminal)
}

// completed reports a turn that ended otherwise than completed as an
// error, naming how it ended.
func completed(terminal *wire.SessionEvent) error {
	if terminal.Type == wire.EventTurnCompleted {
		return nil
	}
	if r, ok := terminal.Payload["reason"]; ok {
		return fmt.Errorf("the turn did not complete: %s (%v)", terminal.Type, r)
	}
	return fmt.Errorf("the turn did not complete: %s", terminal.Type)
}
