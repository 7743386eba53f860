package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is the result of a run, as printed and as written with --json.
// Durations are in seconds or milliseconds as their names say.
type Report struct {
	Config RunConfig  `json:"config"`
	Turns  TurnCounts `json:"turns"`
	// Outcomes counts turns by outcome: "completed", "failed/<reason>",
	// "rejected/<reason>", "error/<what>" (timeout, canceled, submit,
	// follow).
	Outcomes map[string]int `json:"outcomes"`
	// Errors holds the first client error of each "error/..." outcome.
	Errors map[string]string `json:"errors,omitempty"`
	// Seconds is the wall time of the turn phase, first submit to last
	// terminal event.
	Seconds float64 `json:"seconds"`
	// TurnsPerSecond counts completed turns.
	TurnsPerSecond float64 `json:"turns_per_second"`
	// Chunks, Messages and Events count the records the client received.
	Chunks   int `json:"chunks"`
	Messages int `json:"messages"`
	Events   int `json:"events"`
	// Frames counts the chunks that relay a provider frame (the others
	// are attempt markers): the worker stored a raw frame for each.
	Frames int `json:"frames"`
	// ChunksPerTurn averages over the turns that ended.
	ChunksPerTurn   float64 `json:"chunks_per_turn"`
	ChunksPerSecond float64 `json:"chunks_per_second"`
	// RecordsPerSecond counts chunks, messages and events.
	RecordsPerSecond float64 `json:"records_per_second"`
	// FirstChunkMS is the time from submit to the first chunk, over the
	// turns that received one.
	FirstChunkMS Percentiles `json:"first_chunk_ms"`
	// TerminalMS is the time from submit to the terminal event, over the
	// turns that got one.
	TerminalMS Percentiles `json:"terminal_ms"`
	// ChunkBytes is the average payload size of this run's stored chunks.
	ChunkBytes int `json:"chunk_payload_bytes,omitempty"`
	// RawBytes is the average payload size of this run's stored raw frames
	// (the provider's bytes, on TURN_RAW).
	RawBytes int `json:"raw_payload_bytes,omitempty"`
	// Baseline is the raw JetStream baseline; absent when skipped.
	Baseline *Baseline `json:"baseline,omitempty"`
}

// RunConfig records what ran where.
type RunConfig struct {
	Turns         int     `json:"turns"`
	Concurrency   int     `json:"concurrency"`
	Tools         bool    `json:"tools"`
	MockLatencyMS float64 `json:"mock_latency_ms"`
	TurnTimeoutMS float64 `json:"turn_timeout_ms"`
	// Server is "embedded" (the in-process stack) or "external".
	Server        string `json:"server"`
	ServerVersion string `json:"server_version"`
	CPUs          int    `json:"cpus"`
	GOMAXPROCS    int    `json:"gomaxprocs"`
	GoVersion     string `json:"go_version"`
}

// TurnCounts counts turns by how they ended.
type TurnCounts struct {
	// Submitted counts the turns started (all of them unless the run was
	// stopped).
	Submitted int `json:"submitted"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Rejected  int `json:"rejected"`
	// Errors counts turns the client could not follow to a terminal event.
	Errors int `json:"errors"`
}

// Percentiles summarize latencies in milliseconds (nearest rank).
type Percentiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Baseline is raw JetStream on the same server and connection: the same
// number of messages as the run's chunks, with a chunk's headers and
// average payload size, and as many as its frames with a raw frame's (the
// worker stores both per frame).
type Baseline struct {
	Messages     int `json:"messages"`
	PayloadBytes int `json:"payload_bytes"`
	// RawMessages and RawPayloadBytes are the raw-frame-shaped messages,
	// published but not consumed (nobody follows TURN_RAW).
	RawMessages     int `json:"raw_messages"`
	RawPayloadBytes int `json:"raw_payload_bytes"`
	// PublishSeconds runs from the first async publish to the last ack
	// (of both kinds); PublishPerSecond counts the chunk-shaped messages
	// over it, as chunks/s counts a run's chunks.
	PublishSeconds   float64 `json:"publish_seconds"`
	PublishPerSecond float64 `json:"publish_per_second"`
	// Seconds runs from the first publish to the ordered consumer's
	// receipt of the last message.
	Seconds       float64 `json:"seconds"`
	MsgsPerSecond float64 `json:"msgs_per_second"`
	// Overhead is MsgsPerSecond over the run's ChunksPerSecond: how many
	// times longer a chunk takes through turnstream than a bare message.
	Overhead float64 `json:"overhead"`
	// MicrosPerChunk and MicrosPerMsg are the same comparison as wall time
	// per record.
	MicrosPerChunk float64 `json:"turnstream_us_per_chunk"`
	MicrosPerMsg   float64 `json:"raw_us_per_msg"`
}

// addTurns fills the turn part of the report.
func (r *Report) addTurns(results []turnResult, elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	r.Outcomes = map[string]int{}
	var first, terminal []time.Duration
	ended := 0
	for _, t := range results {
		r.Turns.Submitted++
		r.Outcomes[t.outcome]++
		if t.err != nil {
			if r.Errors == nil {
				r.Errors = map[string]string{}
			}
			if _, ok := r.Errors[t.outcome]; !ok {
				r.Errors[t.outcome] = t.err.Error()
			}
		}
		switch {
		case t.outcome == outcomeCompleted:
			r.Turns.Completed++
		case strings.HasPrefix(t.outcome, "failed/"):
			r.Turns.Failed++
		case strings.HasPrefix(t.outcome, "rejected/"):
			r.Turns.Rejected++
		default:
			r.Turns.Errors++
		}
		if !strings.HasPrefix(t.outcome, "error/") {
			ended++
			terminal = append(terminal, t.total)
		}
		if t.chunks > 0 {
			first = append(first, t.firstChunk)
		}
		r.Chunks += t.chunks
		r.Messages += t.messages
		r.Events += t.events
		r.Frames += t.frames
	}
	r.FirstChunkMS = percentiles(first)
	r.TerminalMS = percentiles(terminal)
	if ended > 0 {
		r.ChunksPerTurn = float64(r.Chunks) / float64(ended)
	}
	if r.Seconds > 0 {
		r.TurnsPerSecond = float64(r.Turns.Completed) / r.Seconds
		r.ChunksPerSecond = float64(r.Chunks) / r.Seconds
		r.RecordsPerSecond = float64(r.Chunks+r.Messages+r.Events) / r.Seconds
	}
}

// setBaseline adds the baseline and the comparison.
func (r *Report) setBaseline(b baselineResult) {
	bl := &Baseline{
		Messages: b.messages, PayloadBytes: b.payloadBytes,
		RawMessages: b.rawMessages, RawPayloadBytes: b.rawPayloadBytes,
		PublishSeconds: b.published.Seconds(), Seconds: b.total.Seconds(),
	}
	if bl.PublishSeconds > 0 {
		bl.PublishPerSecond = float64(b.messages) / bl.PublishSeconds
	}
	if bl.Seconds > 0 {
		bl.MsgsPerSecond = float64(b.messages) / bl.Seconds
		bl.MicrosPerMsg = 1e6 / bl.MsgsPerSecond
	}
	if r.ChunksPerSecond > 0 {
		bl.MicrosPerChunk = 1e6 / r.ChunksPerSecond
		bl.Overhead = bl.MsgsPerSecond / r.ChunksPerSecond
	}
	r.Baseline = bl
}

// percentiles summarizes ds by nearest rank.
func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := max(int(math.Ceil(p/100*float64(len(s))))-1, 0)
		return ms(s[i])
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Percentiles{
		N: len(s), P50: rank(50), P90: rank(90), P99: rank(99),
		Max: ms(s[len(s)-1]), Mean: ms(sum / time.Duration(len(s))),
	}
}

// WriteText prints the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	tools := "off"
	if c.Tools {
		tools = "on (get_time, calculate)"
	}
	fmt.Fprintf(&b, "turnstream load test\n")
	fmt.Fprintf(&b, "  run         %d turns, concurrency %d, tools %s, mock latency %s, turn timeout %s\n",
		c.Turns, c.Concurrency, tools, fmtMS(c.MockLatencyMS), fmtMS(c.TurnTimeoutMS))
	fmt.Fprintf(&b, "  server      %s nats-server %s; %d CPUs (GOMAXPROCS %d), %s\n\n",
		c.Server, c.ServerVersion, c.CPUs, c.GOMAXPROCS, c.GoVersion)

	t := r.Turns
	fmt.Fprintf(&b, "turns         %d submitted: %d completed, %d failed, %d rejected, %d errors, in %.2fs\n",
		t.Submitted, t.Completed, t.Failed, t.Rejected, t.Errors, r.Seconds)
	fmt.Fprintf(&b, "throughput    %.1f turns/s, %.0f chunks/s (%.1f chunks/turn), %.0f records/s (chunks, messages, events)\n",
		r.TurnsPerSecond, r.ChunksPerSecond, r.ChunksPerTurn, r.RecordsPerSecond)
	fmt.Fprintf(&b, "latency (ms)  %8s %8s %8s %8s %8s %6s\n", "p50", "p90", "p99", "max", "mean", "n")
	for _, l := range []struct {
		name string
		p    Percentiles
	}{{"first chunk", r.FirstChunkMS}, {"terminal", r.TerminalMS}} {
		fmt.Fprintf(&b, "  %-11s %8.1f %8.1f %8.1f %8.1f %8.1f %6d\n", l.name, l.p.P50, l.p.P90, l.p.P99, l.p.Max, l.p.Mean, l.p.N)
	}
	fmt.Fprintf(&b, "outcomes     ")
	keys := slices.SortedFunc(maps.Keys(r.Outcomes), func(a, b string) int {
		return cmp.Or(cmp.Compare(r.Outcomes[b], r.Outcomes[a]), cmp.Compare(a, b))
	})
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %d", k, r.Outcomes[k])
	}
	fmt.Fprintln(&b)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, r.Errors[k])
	}

	if bl := r.Baseline; bl != nil {
		fmt.Fprintf(&b, "\nbaseline      raw JetStream, same server: %d msgs with a chunk's headers and %d B payload,\n", bl.Messages, bl.PayloadBytes)
		fmt.Fprintf(&b, "              async publish to a stream configured like TURN_CHUNKS, read by an ordered consumer;\n")
		fmt.Fprintf(&b, "              and %d with a raw frame's headers and %d B payload to one like TURN_RAW, not read\n", bl.RawMessages, bl.RawPayloadBytes)
		fmt.Fprintf(&b, "  published   %.3fs  %8.0f msgs/s (every ack received)\n", bl.PublishSeconds, bl.PublishPerSecond)
		fmt.Fprintf(&b, "  consumed    %.3fs  %8.0f msgs/s (last message received)\n", bl.Seconds, bl.MsgsPerSecond)
		fmt.Fprintf(&b, "overhead      turnstream %.0f chunks/s vs raw %.0f msgs/s: %.1fx (%.0f µs vs %.1f µs per chunk)\n",
			r.ChunksPerSecond, bl.MsgsPerSecond, bl.Overhead, bl.MicrosPerChunk, bl.MicrosPerMsg)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// fmtMS prints milliseconds as a Go duration.
func fmtMS(v float64) string { return time.Duration(v * float64(time.Millisecond)).String() }
