package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

func runSubmit(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("submit", "--session S [flags] prompt...", "warn")
	conn := f.natsFlags(natsURLUsage)
	prefix := f.String("prefix", wire.DefaultPrefix, "subject prefix")
	session := f.String("session", "", "session id (required)")
	turnID := f.String("turn", "", "turn id (default: generated)")
	route := f.String("route", "", "route name (default: the worker's default route)")
	system := f.String("system", "", "system prompt")
	demoTools := f.Bool("demo-tools", false, "offer the demo tools get_time and calculate")
	toolsFile := f.String("tools", "", "JSON file with an array of tools to offer ({name, description, parameters})")
	msgpack := f.Bool("msgpack", false, "encode the request in msgpack instead of JSON")
	events := f.Bool("events", false, "also print every audit event of the turn")
	if err := f.Parse(args); err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(f.Args(), " "))
	if *session == "" || prompt == "" {
		f.Usage()
		return errors.New("submit: --session and a prompt are required")
	}
	req := wire.TurnRequest{
		SessionID: *session, TurnID: *turnID, Route: *route, System: *system,
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: prompt}},
	}
	if *demoTools {
		req.Tools = demotools.Tools()
	}
	if *toolsFile != "" {
		b, err := os.ReadFile(*toolsFile)
		if err != nil {
			return fmt.Errorf("submit: --tools: %w", err)
		}
		var tools []wire.Tool
		if err := json.Unmarshal(b, &tools); err != nil {
			return fmt.Errorf("submit: --tools %s: %w", *toolsFile, err)
		}
		req.Tools = append(req.Tools, tools...)
	}
	nc, err := conn.connect(conn.URL(), "turnstream submit")
	if err != nil {
		return err
	}
	defer nc.Close()
	opts := []client.Option{client.WithPrefix(*prefix)}
	if *msgpack {
		opts = append(opts, client.WithCodec(wire.Msgpack))
	}
	c, err := client.New(nc, opts...)
	if err != nil {
		return err
	}
	t, err := c.Submit(ctx, req)
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintf(os.Stderr, "turn %s of session %s submitted\n", t.ID(), t.Session())
	p := console.NewTurnPrinter(out)
	p.Verbose = *events
	return follow(ctx, t, p)
}
