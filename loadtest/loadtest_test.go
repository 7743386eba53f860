package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRun runs the generator against the embedded stack and checks that the
// report's counts add up. It asserts nothing about timing. With -short it
// runs 5 turns, 2 at a time; otherwise 30 turns with tools, 8 at a time.
func TestRun(t *testing.T) {
	o := Options{Turns: 30, Concurrency: 8, Tools: true}
	if testing.Short() {
		o = Options{Turns: 5, Concurrency: 2}
	}
	o.TurnTimeout = time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	want := TurnCounts{Submitted: o.Turns, Completed: o.Turns}
	if rep.Turns != want {
		t.Errorf("turns = %+v; want %+v (outcomes %v)", rep.Turns, want, rep.Outcomes)
	}
	if len(rep.Outcomes) != 1 || rep.Outcomes[outcomeCompleted] != o.Turns {
		t.Errorf("outcomes = %v; want completed %d", rep.Outcomes, o.Turns)
	}
	if rep.Chunks <= 0 || rep.Messages <= 0 || rep.Events <= 0 {
		t.Errorf("chunks %d, messages %d, events %d; want each > 0", rep.Chunks, rep.Messages, rep.Events)
	}
	// Each turn stores its user input and a final answer; with tools also
	// the assistant's tool calls and both results.
	perTurn := 2
	if o.Tools {
		perTurn = 5
	}
	if rep.Messages != perTurn*o.Turns {
		t.Errorf("messages = %d; want %d per turn", rep.Messages, perTurn)
	}
	if rep.FirstChunkMS.N != o.Turns || rep.TerminalMS.N != o.Turns {
		t.Errorf("latency samples: first chunk %d, terminal %d; want %d each", rep.FirstChunkMS.N, rep.TerminalMS.N, o.Turns)
	}
	if got := float64(rep.Chunks) / float64(o.Turns); rep.ChunksPerTurn != got {
		t.Errorf("chunks per turn = %v; want %v", rep.ChunksPerTurn, got)
	}
	for name, p := range map[string]Percentiles{"first chunk": rep.FirstChunkMS, "terminal": rep.TerminalMS} {
		if !(p.P50 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.Max) {
			t.Errorf("%s percentiles out of order: %+v", name, p)
		}
	}
	if rep.FirstChunkMS.Max > rep.TerminalMS.Max {
		t.Errorf("first chunk max %v after terminal max %v", rep.FirstChunkMS.Max, rep.TerminalMS.Max)
	}

	bl := rep.Baseline
	if bl == nil {
		t.Fatal("no baseline in the report")
	}
	if bl.Messages != rep.Chunks {
		t.Errorf("baseline messages = %d; want %d, as many as the chunks", bl.Messages, rep.Chunks)
	}
	if bl.PayloadBytes != rep.ChunkBytes || bl.PayloadBytes <= 0 {
		t.Errorf("baseline payload = %d B; want the chunks' average %d B", bl.PayloadBytes, rep.ChunkBytes)
	}
	// Per frame the worker stores a chunk and a raw frame; the markers that
	// end attempts are chunks only.
	if rep.Frames <= 0 || rep.Frames >= rep.Chunks {
		t.Errorf("frames = %d of %d chunks; want every chunk but the attempt markers", rep.Frames, rep.Chunks)
	}
	if bl.RawMessages != rep.Frames {
		t.Errorf("baseline raw messages = %d; want %d, as many as the frames", bl.RawMessages, rep.Frames)
	}
	if bl.RawPayloadBytes != rep.RawBytes || bl.RawPayloadBytes <= 0 {
		t.Errorf("baseline raw payload = %d B; want the raw frames' average %d B", bl.RawPayloadBytes, rep.RawBytes)
	}
	if bl.MsgsPerSecond <= 0 || bl.Overhead <= 0 {
		t.Errorf("baseline %+v; want positive rates", bl)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatalf("WriteText() = %v", err)
	}
	for _, line := range []string{"turns ", "throughput ", "first chunk ", "terminal ", "outcomes ", "baseline ", "overhead "} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report has no %q line:\n%s", line, text.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON() = %v", err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("report JSON does not decode: %v", err)
	}
	if back.Turns != rep.Turns || back.Chunks != rep.Chunks || back.Baseline == nil {
		t.Errorf("report JSON round trip = %+v; want %+v", back, rep)
	}
}

// TestCommand runs the command as `go run ./loadtest` would, with --json.
func TestCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	args := []string{"--turns", "3", "--concurrency", "2", "--baseline=false", "--json", path}
	if err := run(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v; stderr %s", args, err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "3 submitted: 3 completed") {
		t.Errorf("stdout = %q; want 3 completed turns", stdout.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("--json file does not decode: %v", err)
	}
	if rep.Turns.Completed != 3 || rep.Baseline != nil {
		t.Errorf("--json report: %d completed, baseline %v; want 3 and none", rep.Turns.Completed, rep.Baseline)
	}
}

func TestCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--turns", "0"},
		{"--concurrency", "-1"},
		{"--latency", "-1ms"},
		{"--nats-url", "nats://127.0.0.1:1", "--latency", "5ms"},
		{"extra"},
		{"--profile", "medium"},
		{"--profile", "quick", "--rounds", "-1"},
		{"--profile", "quick", "--nats-url", "nats://127.0.0.1:1"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(t.Context(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) = nil error; want an error", args)
		}
	}
}

func TestPercentiles(t *testing.T) {
	msd := func(vs ...int) []time.Duration {
		var ds []time.Duration
		for _, v := range vs {
			ds = append(ds, time.Duration(v)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 down to 1
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Percentiles
	}{
		{"empty", nil, Percentiles{}},
		{"one", msd(7), Percentiles{N: 1, P50: 7, P90: 7, P99: 7, Max: 7, Mean: 7}},
		{"two", msd(10, 20), Percentiles{N: 2, P50: 10, P90: 20, P99: 20, Max: 20, Mean: 15}},
		{"1 to 100", msd(hundred...), Percentiles{N: 100, P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentiles(tt.in); got != tt.want {
				t.Errorf("percentiles(%v) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestRunHostile runs a small bounded-memory run: a worker process takes
// every request bomb, provider flood and huge tool result, and every valid
// turn among them completes and every hostile case gets its outcome. The
// worker here is this test binary (with -race, several times the memory of
// a release build), so the RSS bound is the full run's job, not this one's.
func TestRunHostile(t *testing.T) {
	o := HostileOptions{Senders: 8, Rounds: 1, Floods: 7, FloodBytes: 64 << 20, Heavy: 2, BigResults: 2, Valid: 8,
		RSSBound: 16 << 30, TurnTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	rep, err := RunHostile(ctx, o)
	if err != nil {
		t.Fatalf("RunHostile() = %v", err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", out.String())
	if !rep.OK() {
		t.Errorf("the hostile run did not hold; see the report")
	}
	if rep.Hostile.Valid != 8 || rep.Hostile.ValidCompleted != 8 || rep.Baseline.ValidCompleted != 8 {
		t.Errorf("valid turns completed: baseline %d, hostile %d of 8", rep.Baseline.ValidCompleted, rep.Hostile.ValidCompleted)
	}
	// Every bomb (7), flood kind (7), the heavy schema and the big result.
	if n := len(rep.Cases); n != 16 {
		t.Errorf("%d hostile cases ran; want 16", n)
	}
	if rep.Hostile.PeakRSS <= 0 || rep.Baseline.PeakRSS <= 0 {
		t.Errorf("peak RSS not measured: %d, %d", rep.Baseline.PeakRSS, rep.Hostile.PeakRSS)
	}
}
