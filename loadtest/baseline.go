package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// baselineStream is the stream of the raw JetStream baseline; it is
// configured like TURN_CHUNKS and deleted after the run.
const baselineStream = "LOADTEST_BASELINE"

// baselineTimeout bounds the baseline; at raw JetStream speeds it takes
// seconds.
const baselineTimeout = 5 * time.Minute

// apiTimeout bounds one JetStream API request of the baseline's set-up. A
// request the server refuses (no permission) gets no answer and ends here.
const apiTimeout = 10 * time.Second

// baselineResult is what the raw JetStream baseline measured.
type baselineResult struct {
	messages, payloadBytes int
	// published is the time until every publish was acknowledged.
	published time.Duration
	// total is the time until the ordered consumer received the last one.
	total time.Duration
}

// runBaseline publishes n messages shaped like sample (its headers, its
// payload size) asynchronously to a stream configured like TURN_CHUNKS, as
// the worker publishes chunks, and reads them with an ordered consumer
// started before the first publish, as a client follows a turn.
func runBaseline(ctx context.Context, js jetstream.JetStream, runID string, n int, sample *jetstream.RawStreamMsg) (b baselineResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, baselineTimeout)
	defer cancel()
	actx, acancel := context.WithTimeout(ctx, apiTimeout)
	defer acancel()
	chunks, err := js.Stream(actx, wire.StreamChunks)
	if err != nil {
		return b, fmt.Errorf("loadtest: baseline: %w", err)
	}
	cfg := chunks.CachedInfo().Config
	cfg.Name = baselineStream
	cfg.Description = "turnstream loadtest raw JetStream baseline (deleted after the run)"
	cfg.Subjects = []string{"loadtest.baseline.>"}
	cfg.MaxAge = time.Hour
	stream, err := js.CreateStream(actx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		err = js.DeleteStream(actx, baselineStream) // left by an interrupted run
		if err == nil {
			stream, err = js.CreateStream(actx, cfg)
		}
	}
	if err != nil {
		return b, fmt.Errorf("loadtest: baseline: create stream %s (the user needs permission to create it; or run with --baseline=false): %w", baselineStream, err)
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
		defer dcancel()
		if derr := js.DeleteStream(dctx, baselineStream); derr != nil && err == nil {
			err = fmt.Errorf("loadtest: baseline: delete stream %s: %w", baselineStream, derr)
		}
	}()

	// A chunk subject is turn.chunk.<session>.<turn>: keep the same shape
	// and length.
	subject := "loadtest.baseline." + runID + "." + strings.Repeat("x", max(len(sample.Subject)-len("loadtest.baseline.")-len(runID)-1, 1))
	header := nats.Header{}
	for k, v := range sample.Header {
		if !strings.HasPrefix(k, "Nats-") {
			header[k] = v
		}
	}
	payload := []byte(strings.Repeat("x", len(sample.Data)))
	b.messages, b.payloadBytes = n, len(payload)

	cons, err := stream.OrderedConsumer(actx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return b, fmt.Errorf("loadtest: baseline: consumer: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return b, fmt.Errorf("loadtest: baseline: consumer: %w", err)
	}
	defer it.Stop()
	consumed := make(chan error, 1)
	var consumedAt time.Time
	go func() {
		for i := 0; i < n; i++ {
			if _, err := it.Next(jetstream.NextContext(ctx)); err != nil {
				consumed <- fmt.Errorf("loadtest: baseline: consume message %d of %d: %w", i+1, n, err)
				return
			}
		}
		consumedAt = time.Now()
		consumed <- nil
	}()

	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, n)
	for i := range n {
		m := &nats.Msg{Subject: subject, Header: header, Data: payload}
		f, err := publishAsync(js, m)
		if err != nil {
			return b, fmt.Errorf("loadtest: baseline: publish message %d: %w", i+1, err)
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return b, fmt.Errorf("loadtest: baseline: waiting for publish acks: %w", ctx.Err())
	}
	b.published = time.Since(start)
	for i, f := range futures {
		select {
		case err := <-f.Err():
			return b, fmt.Errorf("loadtest: baseline: publish message %d: %w", i+1, err)
		default:
		}
	}
	if err := <-consumed; err != nil {
		return b, err
	}
	b.total = consumedAt.Sub(start)
	return b, nil
}

// maxStalls bounds the retries of a publish refused because too many acks
// are outstanding; each waits for the client's stall time (200ms).
const maxStalls = 100

// publishAsync publishes m asynchronously, waiting while the window of
// outstanding acks is full.
func publishAsync(js jetstream.JetStream, m *nats.Msg) (jetstream.PubAckFuture, error) {
	for stalls := 0; ; stalls++ {
		f, err := js.PublishMsgAsync(m)
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) && stalls < maxStalls {
			continue
		}
		return f, err
	}
}
