package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunProfile runs a tiny profile end to end: every part in its own
// process, every leg, and the reports. It asserts what was counted, not
// how fast: every turn delivered, every figure present.
func TestRunProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	o := ProfileOptions{Name: "tiny", Rounds: 1, CPUTurns: 4, ThroughputTurns: 8, SerialTurns: 4, RTTSamples: 10,
		SessionTurns: 3, InFlight: 20, RampTimeout: time.Minute, TurnTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	rep, err := RunProfile(ctx, o)
	if err != nil {
		t.Fatalf("RunProfile() = %v", err)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", md.String())
	if !rep.OK() {
		t.Errorf("delivery not exact: %+v", rep.totalDelivery())
	}
	if a := rep.Audit; a == nil || !a.OK() || a.Turns == 0 {
		t.Errorf("audit of what was stored %+v; want every turn exact", a)
	}
	if got, want := len(rep.Legs), len(scenarios)*len(paths); got != want {
		t.Errorf("%d legs; want %d", got, want)
	}
	for _, l := range rep.Legs {
		if len(l.Rounds) != 1 || l.Rounds[0].Completed != l.Rounds[0].Turns {
			t.Errorf("leg %s/%s rounds %+v; want one with every turn completed", l.Scenario, l.Path, l.Rounds)
		}
	}
	if m := rep.Memory; m == nil || m.Held != o.InFlight || m.HeldDelivery.Complete != o.InFlight {
		t.Errorf("memory leg %+v; want %d held and delivered", m, o.InFlight)
	} else if len(m.Followers) != 1 || m.Followers[0].AtOnce != o.InFlight || m.Followers[0].Completed != o.InFlight {
		t.Errorf("follower leg %+v; want one step of %d following at once, all complete", m.Followers, o.InFlight)
	}
	if g := rep.Growth; g == nil || len(g.LatencyMS) != o.SessionTurns {
		t.Errorf("growth %+v; want %d turns", g, o.SessionTurns)
	}
	for _, f := range rep.Figures {
		if f.Met == "" {
			t.Errorf("figure %q has no verdict", f.Name)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON() = %v", err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("report JSON does not decode: %v", err)
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg.Bytes())
}

// checkXML fails unless b is well-formed XML with an svg root.
func checkXML(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("SVG root element = %q; want svg", root)
	}
}

func TestSpreadOf(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want Spread
	}{
		{"one", []float64{3}, Spread{Median: 3, Min: 3, Max: 3, N: 1}},
		{"odd", []float64{5, 1, 3}, Spread{Median: 3, Min: 1, Max: 5, N: 3}},
		{"even", []float64{4, 1, 3, 2}, Spread{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{"NaNs left out", []float64{nan, 2, math.Inf(1), 4}, Spread{Median: 3, Min: 2, Max: 4, N: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spreadOf(tt.in); got != tt.want {
				t.Errorf("spreadOf(%v) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
	if got := spreadOf(nil); got.N != 0 || !math.IsNaN(got.Median) {
		t.Errorf("spreadOf(nil) = %+v; want N 0 and NaN", got)
	}
	b, err := json.Marshal(spreadOf(nil))
	if err != nil || !strings.Contains(string(b), `"median":null`) {
		t.Errorf("json.Marshal(empty spread) = %s, %v; want a null median", b, err)
	}
}

func TestGrowthOf(t *testing.T) {
	lat := make([]float64, 300)
	for i := range lat {
		lat[i] = 10 + float64(i)/10 // turn k: 10 + (k-1)/10 ms
	}
	got := growthOf(lat, []int{1, 10, 200, 1000}, 1)
	if len(got) != 3 {
		t.Fatalf("growthOf() = %d points; want 3 (1000 is past the session)", len(got))
	}
	// Turn 1's window is turns 1..3 (median 10.1); turn 200's 198..202
	// (median 29.9).
	if p := got[2]; p.Turn != 200 || math.Abs(p.LatencyMS-29.9) > 1e-9 || math.Abs(p.Ratio.Median-29.9/10.1) > 1e-9 {
		t.Errorf("point 200 = %+v; want latency 29.9, ratio %v", p, 29.9/10.1)
	}
	if p := got[0]; p.Ratio.Median != 1 || p.Ratio.Min >= 1 || p.Ratio.Max <= 1 {
		t.Errorf("point 1 = %+v; want ratio 1 within its window's spread", p)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want int64
	}{
		{"plain", "42 (loadtest) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 8 0 100 1000 200", 10},
		{"spaces and parens in the name", "42 (a (b) c) R 1 42 42 0 -1 4194560 100 0 0 0 120 30 0 0 20 0 8 0 100 1000 200", 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if err != nil || got != tt.want {
				t.Errorf("parseStatCPU(%q) = %d, %v; want %d", tt.stat, got, err, tt.want)
			}
		})
	}
	if _, err := parseStatCPU([]byte("42 (short) S 1")); err == nil {
		t.Error("parseStatCPU(short line) = nil error; want an error")
	}
	rss, hwm := parseStatusMemory([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"))
	if rss != 1024<<10 || hwm != 2048<<10 {
		t.Errorf("parseStatusMemory() = %d, %d; want %d, %d", rss, hwm, 1024<<10, 2048<<10)
	}
}

// TestReadProcSelf reads the test's own process.
// sink keeps the compiler from dropping TestReadProcSelf's work.
var sink int

func TestReadProcSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before, err := readProc(os.Getpid())
	if err != nil {
		t.Fatalf("readProc(self) = %v", err)
	}
	// Burn CPU until the clock ticks (bounded: a tick is 10 ms of CPU).
	var after procSample
	for i := 0; ; i++ {
		x := 0
		for j := range 1_000_000 {
			x += j * j
		}
		sink = x
		if after, err = readProc(os.Getpid()); err != nil {
			t.Fatalf("readProc(self) = %v", err)
		}
		if after.CPU > before.CPU {
			break
		}
		if i == 100_000 {
			t.Fatalf("CPU stayed %v over %d rounds of work; want it to grow", before.CPU, i)
		}
	}
	if after.RSS <= 0 || after.HWM < after.RSS {
		t.Errorf("RSS %d, HWM %d; want 0 < RSS <= HWM", after.RSS, after.HWM)
	}
}

func TestPrompt(t *testing.T) {
	for _, tt := range []struct {
		frames int
		hold   bool
	}{{16, false}, {70, true}, {minFrames, false}} {
		p := textPrompt(tt.frames, tt.hold)
		frames, hold, ok := parsePrompt(p)
		if !ok || frames != tt.frames || hold != tt.hold {
			t.Errorf("parsePrompt(%q) = %d, %v, %v; want %d, %v, true", p, frames, hold, ok, tt.frames, tt.hold)
		}
		if n := len(textAnswer(tt.frames).Frames()); n != tt.frames {
			t.Errorf("textAnswer(%d) has %d frames", tt.frames, n)
		}
	}
	for _, p := range []string{"hello", "lt:frames=3", "lt:frames=x", "lt:hold:", ""} {
		if _, _, ok := parsePrompt(p); ok {
			t.Errorf("parsePrompt(%q) ok; want not a text-turn prompt", p)
		}
	}
}

func TestCheckTurn(t *testing.T) {
	accepted := eventRecord{Type: "turn.accepted", Delivery: 1}
	completed := eventRecord{Type: "turn.completed", Terminal: true}
	chunks := func(step, attempt, n int) []chunkRecord {
		var cs []chunkRecord
		for i := 1; i <= n; i++ {
			c := chunkRecord{Step: step, Attempt: attempt, Seq: i}
			if i == n {
				c.Marker = "completed"
			}
			cs = append(cs, c)
		}
		return cs
	}
	good := turnRecords{Chunks: append(chunks(0, 1, 5), chunks(1, 1, 3)...), Events: []eventRecord{accepted, {Type: "llm/request"}, completed}}
	tests := []struct {
		name string
		r    turnRecords
		want []problemKind
	}{
		{"complete", good, nil},
		{"complete, chunks only", turnRecords{Chunks: chunks(0, 1, 4), ChunksOnly: true}, nil},
		{"a gap", turnRecords{Chunks: []chunkRecord{{Seq: 1, Attempt: 1}, {Seq: 3, Attempt: 1, Marker: "completed"}}, Events: good.Events}, []problemKind{problemGap}},
		{"a duplicate", turnRecords{Chunks: []chunkRecord{{Seq: 1, Attempt: 1}, {Seq: 1, Attempt: 1}, {Seq: 2, Attempt: 1, Marker: "completed"}}, Events: good.Events}, []problemKind{problemGap, problemGap}},
		{"reordered", turnRecords{Chunks: []chunkRecord{{Seq: 2, Attempt: 1}, {Seq: 1, Attempt: 1}, {Seq: 3, Attempt: 1, Marker: "completed"}}, Events: good.Events}, []problemKind{problemGap}},
		{"lost marker", turnRecords{Chunks: chunks(0, 1, 5)[:4], Events: good.Events}, []problemKind{problemMarker}},
		{"marker not last", turnRecords{Chunks: []chunkRecord{{Seq: 1, Attempt: 1, Marker: "completed"}, {Seq: 2, Attempt: 1}}, Events: good.Events}, []problemKind{problemMarker}},
		{"no terminal", turnRecords{Chunks: chunks(0, 1, 3), Events: []eventRecord{accepted}}, []problemKind{problemTerminal}},
		{"two terminals", turnRecords{Chunks: chunks(0, 1, 3), Events: []eventRecord{accepted, completed, completed}}, []problemKind{problemTerminal}},
		{"redelivered", turnRecords{Chunks: chunks(0, 1, 3), Events: []eventRecord{{Type: "turn.accepted", Delivery: 2}, completed}}, []problemKind{problemRerun}},
		{"resumed", turnRecords{Chunks: chunks(0, 1, 3), Events: []eventRecord{{Type: "turn.accepted", Delivery: 1, Resumed: true}, completed}}, []problemKind{problemRerun}},
		{"second attempt", turnRecords{Chunks: append(chunks(0, 1, 3), chunks(0, 2, 3)...), Events: good.Events}, []problemKind{problemRerun}},
		{"failed", turnRecords{Chunks: chunks(0, 1, 3), Events: []eventRecord{accepted, {Type: "turn.failed", Terminal: true}}}, []problemKind{problemNotCompleted}},
		{"follower error", turnRecords{Err: errors.New("timeout")}, []problemKind{problemNotCompleted, problemTerminal}},
		{"no accepted", turnRecords{Chunks: chunks(0, 1, 3), Events: []eventRecord{completed}}, []problemKind{problemEvents}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []problemKind
			for _, p := range checkTurn(tt.r) {
				got = append(got, p.kind)
			}
			if !equalKinds(got, tt.want) {
				t.Errorf("checkTurn() kinds = %v; want %v (%v)", got, tt.want, checkTurn(tt.r))
			}
			var d DeliveryCheck
			d.add(tt.r)
			if d.Exact() != (len(tt.want) == 0) {
				t.Errorf("DeliveryCheck.Exact() = %v after %+v", d.Exact(), d)
			}
		})
	}
}

func equalKinds(a, b []problemKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWriteSVG draws a report with made-up legs, and one with none.
func TestWriteSVG(t *testing.T) {
	rep := &ProfileReport{Profile: "test <&>", Date: "2026-12-01"}
	for i, sc := range scenarios {
		for j, path := range paths {
			l := rep.leg(sc, path)
			v := float64(1 + i + j)
			l.Rounds = []LegRound{{TurnsPerSecond: 100 * v, TotalMS: Percentiles{P50: v, P90: 2 * v, P99: 3 * v}}}
		}
	}
	rep.finish()
	for _, r := range []*ProfileReport{rep, {Profile: "empty"}} {
		var b bytes.Buffer
		if err := r.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		checkXML(t, b.Bytes())
	}
}
