package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

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

func runDemo(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("demo", "[flags] [prompt]", "warn")
	latency := f.Duration("latency", 15*time.Millisecond, "mock provider delay per streamed chunk")
	events := f.Bool("events", false, "also print every audit event of the turn")
	if err := f.Parse(args); err != nil {
		return err
	}
	log, err := f.logger()
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(f.Args(), " "))
	if prompt == "" {
		prompt = defaultPrompt
	}
	st, err := stack.Start(ctx, stack.Options{MockLatency: *latency, Log: log})
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
	p.Verbose = *events
	return follow(ctx, t, p)
}

// follow prints a turn to its end and reports a turn that did not complete
// as an error.
func follow(ctx context.Context, t *client.Turn, p *console.TurnPrinter) error {
	terminal, err := console.Follow(ctx, t, p)
	if err != nil {
		return err
	}
	if terminal.Type != wire.EventTurnCompleted {
		return fmt.Errorf("the turn did not complete")
	}
	return nil
}
