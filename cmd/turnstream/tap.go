package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/internal/console"
	"github.com/turnstream/turnstream/pkg/wire"
)

func runTap(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("tap", "[--session S] [--all] [--json]", "warn")
	url := f.String("nats-url", "", "NATS server URL (default $NATS_URL, else nats://127.0.0.1:4222)")
	prefix := f.String("prefix", wire.DefaultPrefix, "subject prefix")
	session := f.String("session", "", "only this session (default: every session)")
	all := f.Bool("all", false, "start from the oldest stored event instead of new ones")
	asJSON := f.Bool("json", false, "print each event as one JSON line")
	if err := f.Parse(args); err != nil {
		return err
	}
	subjects := wire.Subjects{Prefix: *prefix}
	// Every session's events, and not the workers' lease fence markers
	// (turn.event.=fence.<session>, one token more).
	filter := subjects.Event("*")
	if *session != "" {
		if !wire.ValidToken(*session) {
			return fmt.Errorf("tap: %q is not a valid session id", *session)
		}
		filter = subjects.Event(*session)
	}
	nc, err := nats.Connect(natsURL(*url), nats.Name("turnstream tap"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, wire.StreamEvents)
	if err != nil {
		return fmt.Errorf("tap: %w (has a worker created the streams?)", err)
	}
	policy := jetstream.DeliverNewPolicy
	if *all {
		policy = jetstream.DeliverAllPolicy
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: policy})
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	defer it.Stop()
	fmt.Fprintf(os.Stderr, "tapping %s (Ctrl-C stops)\n", filter)
	enc := json.NewEncoder(out)
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("tap: %w", err)
		}
		var ev wire.SessionEvent
		if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &ev); err != nil {
			fmt.Fprintf(os.Stderr, "tap: skipping undecodable event on %s: %v\n", m.Subject(), err)
			continue
		}
		if *asJSON {
			if err := enc.Encode(&ev); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "%s %-12s %s\n", ev.Time.Format("15:04:05.000"), ev.SessionID, console.EventLine(&ev))
	}
}
