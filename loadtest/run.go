package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/internal/stack"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Run runs the load test and returns its report. When ctx ends early it
// returns the report of the turns so far (unstarted turns are not
// submitted, running ones end as error/canceled) with ctx's error.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.applyDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Config: RunConfig{
		Turns: o.Turns, Concurrency: o.Concurrency, Tools: o.Tools,
		MockLatencyMS: ms(o.MockLatency), TurnTimeoutMS: ms(o.TurnTimeout),
		Server: "embedded", CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(),
	}}

	url := o.NATSURL
	if url == "" {
		st, err := stack.Start(ctx, stack.Options{MockLatency: o.MockLatency, Log: o.Log})
		if err != nil {
			return nil, fmt.Errorf("loadtest: start the stack: %w", err)
		}
		defer st.Close()
		// The stack's worker calls the mock provider with the default
		// transport. Close its idle connections before the stack stops, so
		// that the mock's graceful shutdown has none to wait for.
		defer closeIdleHTTP()
		url = st.NATSURL
	} else {
		rep.Config.Server = "external"
	}
	nc, err := nats.Connect(url, nats.Name("turnstream loadtest"))
	if err != nil {
		return nil, fmt.Errorf("loadtest: connect: %w", err)
	}
	defer nc.Close()
	rep.Config.ServerVersion = nc.ConnectedServerVersion()
	if rep.Config.Server == "embedded" {
		rep.Config.ServerVersion = server.VERSION
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	cl, err := client.New(nc)
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	chunks, err := js.Stream(ctx, wire.StreamChunks)
	if err != nil {
		return nil, fmt.Errorf("loadtest: stream %s (is a worker running?): %w", wire.StreamChunks, err)
	}
	firstChunkSeq := chunks.CachedInfo().State.LastSeq + 1
	raw, err := js.Stream(ctx, wire.StreamRaw)
	if err != nil {
		return nil, fmt.Errorf("loadtest: stream %s (is a worker running?): %w", wire.StreamRaw, err)
	}
	firstRawSeq := raw.CachedInfo().State.LastSeq + 1

	runID := nuid.Next()[:10]
	results, elapsed := runTurns(ctx, cl, runID, o)
	rep.addTurns(results, elapsed)
	if err := ctx.Err(); err != nil {
		return rep, err
	}

	if o.SkipBaseline || rep.Chunks == 0 {
		return rep, nil
	}
	sample, err := sampleRecords(ctx, chunks, firstChunkSeq)
	if err != nil {
		return rep, err
	}
	rep.ChunkBytes = len(sample.Data)
	// Per frame the worker also stores the provider's bytes on TURN_RAW:
	// the baseline publishes them too.
	var rawSample *jetstream.RawStreamMsg
	if rep.Frames > 0 {
		if rawSample, err = sampleRecords(ctx, raw, firstRawSeq); err != nil {
			return rep, err
		}
		rep.RawBytes = len(rawSample.Data)
	}
	b, err := runBaseline(ctx, js, runID, baselineShape{
		chunks: rep.Chunks, chunk: sample, frames: rep.Frames, raw: rawSample,
	})
	if err != nil {
		return rep, err
	}
	rep.setBaseline(b)
	return rep, nil
}

// turnResult is what one turn measured.
type turnResult struct {
	// firstChunk is the time from submit to the first chunk; 0 if none came.
	firstChunk time.Duration
	// total is the time from submit to the terminal event (or the error).
	total                    time.Duration
	chunks, messages, events int
	// frames counts the chunks that relay a provider frame (not attempt
	// markers): each has its raw frame on TURN_RAW.
	frames int
	// outcome is "completed", "failed/<reason>", "rejected/<reason>" or
	// "error/<what>".
	outcome string
	// err is the client error of an "error/..." outcome.
	err error
}

// runTurns submits o.Turns turns, o.Concurrency at a time, and returns each
// one's result and the wall time of the whole phase.
func runTurns(ctx context.Context, cl *client.Client, runID string, o Options) ([]turnResult, time.Duration) {
	results := make([]turnResult, o.Turns)
	started := make([]bool, o.Turns)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range min(o.Concurrency, o.Turns) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= o.Turns {
					return
				}
				started[i] = true
				results[i] = runTurn(ctx, cl, request(runID, i, o.Tools), o.TurnTimeout)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var done []turnResult
	for i, r := range results {
		if started[i] {
			done = append(done, r)
		}
	}
	return done, elapsed
}

// request is turn i of the run, in a session of its own so that turns do
// not queue behind each other (turns of one session run in order).
func request(runID string, i int, tools bool) wire.TurnRequest {
	req := wire.TurnRequest{
		SessionID: fmt.Sprintf("lt-%s-%06d", runID, i),
		TurnID:    "t1",
		Input:     []wire.InputMessage{{Role: wire.RoleUser, Content: fmt.Sprintf("Load test turn %d: please answer briefly.", i)}},
	}
	if tools {
		req.Input[0].Content = fmt.Sprintf("Load test turn %d: what time is it, and what is 17 * 23?", i)
		req.Tools = demotools.Tools()
	}
	return req
}

// runTurn submits one turn and follows it to its end.
func runTurn(ctx context.Context, cl *client.Client, req wire.TurnRequest, timeout time.Duration) (r turnResult) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	defer func() { r.total = time.Since(start) }()
	turn, err := cl.Submit(tctx, req)
	if err != nil {
		r.outcome, r.err = errorOutcome(ctx, tctx, "submit"), err
		return r
	}
	defer turn.Close()
	for {
		u, err := turn.Next(tctx)
		if errors.Is(err, io.EOF) {
			return r
		}
		if err != nil {
			r.outcome, r.err = errorOutcome(ctx, tctx, "follow"), err
			return r
		}
		switch {
		case u.Chunk != nil:
			if r.chunks == 0 {
				r.firstChunk = time.Since(start)
			}
			r.chunks++
			if u.Chunk.Marker == "" {
				r.frames++
			}
		case u.Message != nil:
			r.messages++
		case u.Event != nil:
			r.events++
			if u.Event.Terminal() {
				r.outcome = eventOutcome(u.Event)
			}
		}
	}
}

// errorOutcome names a client-side failure: the run was stopped, the turn
// timed out, or what failed.
func errorOutcome(runCtx, turnCtx context.Context, what string) string {
	switch {
	case runCtx.Err() != nil:
		return "error/canceled"
	case turnCtx.Err() != nil:
		return "error/timeout"
	}
	return "error/" + what
}

// eventOutcome names a terminal event's outcome with its coarse reason.
func eventOutcome(ev *wire.SessionEvent) string {
	switch ev.Type {
	case wire.EventTurnCompleted:
		return outcomeCompleted
	case wire.EventTurnFailed:
		return "failed/" + reason(ev)
	case wire.EventTurnRejected:
		return "rejected/" + reason(ev)
	}
	return "error/terminal-" + ev.Type
}

const outcomeCompleted = "completed"

// reason is the event's reason, with the provider failure class when it
// has one ("provider_failed:RESPONSE_TOO_LARGE").
func reason(ev *wire.SessionEvent) string {
	var s, class string
	switch p, _ := ev.Decode(); p := p.(type) {
	case wire.TurnFailed:
		s, class = string(p.Reason), string(p.Class)
	case wire.TurnRejected:
		s = string(p.Reason)
	}
	if s == "" {
		s = "unknown"
	}
	if class != "" {
		s += ":" + class
	}
	return s
}

// sampleRecords returns a record this run stored in stream (a chunk, a
// raw frame), to copy its headers and size: the headers of the first one
// and the average payload size of up to 256 spread over the run. Lease
// fence markers are not records of a turn and are skipped.
func sampleRecords(ctx context.Context, stream jetstream.Stream, firstSeq uint64) (*jetstream.RawStreamMsg, error) {
	name := stream.CachedInfo().Config.Name
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("loadtest: stream %s: %w", name, err)
	}
	last := info.State.LastSeq
	if last < firstSeq {
		return nil, fmt.Errorf("loadtest: no record of this run is stored in %s", name)
	}
	const samples = 256
	step := max((last-firstSeq+1)/samples, 1)
	var first *jetstream.RawStreamMsg
	total, n := 0, 0
	for seq := firstSeq; seq <= last && n < samples; seq += step {
		m, err := stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("loadtest: sample record %d of %s: %w", seq, name, err)
		}
		if strings.Contains(m.Subject, ".=fence.") {
			continue
		}
		if first == nil {
			first = m
		}
		total += len(m.Data)
		n++
	}
	if first == nil {
		return nil, fmt.Errorf("loadtest: no record of this run is stored in %s", name)
	}
	return &jetstream.RawStreamMsg{Subject: first.Subject, Header: first.Header, Data: make([]byte, total/n)}, nil
}

// closeIdleHTTP closes the idle connections of the default HTTP transport.
func closeIdleHTTP() {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
