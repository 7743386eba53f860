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

// baselineStream and baselineRawStream are the streams of the raw
// JetStream baseline, configured like TURN_CHUNKS and TURN_RAW; they are
// deleted after the run.
const (
	baselineStream    = "LOADTEST_BASELINE"
	baselineRawStream = "LOADTEST_BASELINE_RAW"
)

// baselineTimeout bounds the baseline; at raw JetStream speeds it takes
// seconds.
const baselineTimeout = 5 * time.Minute

// apiTimeout bounds one JetStream API request of the baseline's set-up. A
// request the server refuses (no permission) gets no answer and ends here.
const apiTimeout = 10 * time.Second

// baselineResult is what the raw JetStream baseline measured.
type baselineResult struct {
	messages, payloadBytes       int
	rawMessages, rawPayloadBytes int
	// published is the time until every publish was acknowledged.
	published time.Duration
	// total is the time until the ordered consumer received the last
	// chunk-shaped message.
	total time.Duration
}

// baselineShape is what the run stored, for the baseline to publish the
// same: chunks messages shaped like chunk, frames of them with a raw
// frame shaped like raw.
type baselineShape struct {
	chunks int
	chunk  *jetstream.RawStreamMsg
	frames int
	raw    *jetstream.RawStreamMsg
}

// runBaseline publishes, asynchronously as the worker does, one message
// shaped like a chunk (its headers, its payload size) per chunk of the run
// to a stream configured like TURN_CHUNKS, and before each of the first
// shape.frames of them one shaped like a raw frame to a stream configured
// like TURN_RAW (the worker stores a frame's bytes there before its
// chunk). An ordered consumer started before the first publish reads the
// chunk-shaped messages, as a client follows a turn; nobody reads the raw
// ones, as nobody follows TURN_RAW.
func runBaseline(ctx context.Context, js jetstream.JetStream, runID string, shape baselineShape) (b baselineResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, baselineTimeout)
	defer cancel()
	stream, err := baselineLike(ctx, js, wire.StreamChunks, baselineStream, "loadtest.baseline.>")
	if err != nil {
		return b, err
	}
	defer dropBaseline(ctx, js, baselineStream, &err)
	if shape.frames > 0 {
		if _, err := baselineLike(ctx, js, wire.StreamRaw, baselineRawStream, "loadtest.baselineraw.>"); err != nil {
			return b, err
		}
		defer dropBaseline(ctx, js, baselineRawStream, &err)
	}

	chunk := baselineMsg("loadtest.baseline.", runID, shape.chunk)
	b.messages, b.payloadBytes = shape.chunks, len(chunk.Data)
	var raw *nats.Msg
	if shape.frames > 0 {
		raw = baselineMsg("loadtest.baselineraw.", runID, shape.raw)
		b.rawMessages, b.rawPayloadBytes = shape.frames, len(raw.Data)
	}
	n := shape.chunks

	actx, acancel := context.WithTimeout(ctx, apiTimeout)
	defer acancel()
	cons, err := stream.OrderedConsumer(actx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{chunk.Subject}})
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
	futures := make([]jetstream.PubAckFuture, 0, n+shape.frames)
	for i := range n {
		if i < shape.frames {
			f, err := publishAsync(js, &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
			if err != nil {
				return b, fmt.Errorf("loadtest: baseline: publish raw message %d: %w", i+1, err)
			}
			futures = append(futures, f)
		}
		f, err := publishAsync(js, &nats.Msg{Subject: chunk.Subject, Header: chunk.Header, Data: chunk.Data})
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
			return b, fmt.Errorf("loadtest: baseline: publish %d: %w", i+1, err)
		default:
		}
	}
	if err := <-consumed; err != nil {
		return b, err
	}
	b.total = consumedAt.Sub(start)
	return b, nil
}

// baselineLike creates stream name configured like the topology's stream
// like, on subjects.
func baselineLike(ctx context.Context, js jetstream.JetStream, like, name, subjects string) (jetstream.Stream, error) {
	actx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	model, err := js.Stream(actx, like)
	if err != nil {
		return nil, fmt.Errorf("loadtest: baseline: %w", err)
	}
	cfg := model.CachedInfo().Config
	cfg.Name = name
	cfg.Description = "turnstream loadtest raw JetStream baseline (deleted after the run)"
	cfg.Subjects = []string{subjects}
	cfg.MaxAge = time.Hour
	cfg.RePublish = nil
	stream, err := js.CreateStream(actx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		err = js.DeleteStream(actx, name) // left by an interrupted run
		if err == nil {
			stream, err = js.CreateStream(actx, cfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("loadtest: baseline: create stream %s (the user needs permission to create it; or run with --baseline=false): %w", name, err)
	}
	return stream, nil
}

// dropBaseline deletes a baseline stream; its failure becomes *err unless
// one is already there.
func dropBaseline(ctx context.Context, js jetstream.JetStream, name string, err *error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	defer cancel()
	if derr := js.DeleteStream(dctx, name); derr != nil && *err == nil {
		*err = fmt.Errorf("loadtest: baseline: delete stream %s: %w", name, derr)
	}
}

// baselineMsg is a message shaped like sample: on a subject under prefix
// of the same length (turn.chunk.<session>.<turn>, turn.raw.<session>.<turn>),
// with its headers but the server's, and a payload of its size.
func baselineMsg(prefix, runID string, sample *jetstream.RawStreamMsg) *nats.Msg {
	subject := prefix + runID + "." + strings.Repeat("x", max(len(sample.Subject)-len(prefix)-len(runID)-1, 1))
	header := nats.Header{}
	for k, v := range sample.Header {
		if !strings.HasPrefix(k, "Nats-") {
			header[k] = v
		}
	}
	return &nats.Msg{Subject: subject, Header: header, Data: []byte(strings.Repeat("x", len(sample.Data)))}
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
