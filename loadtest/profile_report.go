package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// ProfileReport is what a profile run measured, as printed (Markdown) and
// written with --json. Times are in milliseconds or microseconds as the
// names say; CPU per chunk divides by the chunks the provider streamed
// (the same count on every path).
type ProfileReport struct {
	Profile string        `json:"profile"`
	Date    string        `json:"date"`
	Seconds float64       `json:"seconds"`
	Config  ProfileConfig `json:"config"`
	Machine Machine       `json:"machine"`
	// RTT is the round trip the time to first chunk is counted in.
	RTT RTTFigures `json:"rtt"`
	// Legs are the timed legs, one per scenario and path, each with its
	// rounds.
	Legs   []*LegSummary `json:"legs"`
	Growth *GrowthResult `json:"session_growth,omitempty"`
	Memory *MemoryResult `json:"memory,omitempty"`
	// Delivery checks every turn of the run the followers received:
	// turnstream's and the raw-NATS baseline's.
	Delivery DeliveryCheck `json:"delivery"`
	// LiveGaps counts core-subscriber turns whose live records were
	// incomplete and were read from the streams instead (core NATS may
	// drop a republished record; the delivery check then uses the stored
	// ones).
	LiveGaps int `json:"live_gaps"`
	// Audit is the check of what the run stored, once every request
	// settled (nil if the run did not get that far).
	Audit *Audit `json:"audit,omitempty"`
	// Figures are issue 11's table; Context the figures beside it.
	Figures []Figure `json:"figures"`
	Context []Figure `json:"context"`
}

// ProfileConfig records the profile's sizes.
type ProfileConfig struct {
	Rounds          int     `json:"rounds"`
	CPUTurns        int     `json:"cpu_turns"`
	ThroughputTurns int     `json:"throughput_turns"`
	SerialTurns     int     `json:"serial_turns"`
	FrameLatencyMS  float64 `json:"frame_latency_ms"`
	SessionTurns    int     `json:"session_turns"`
	ContextTokens   int     `json:"context_tokens"`
	InFlight        int     `json:"in_flight"`
}

// Machine is where the run ran.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GoVersion  string `json:"go_version"`
	NATSServer string `json:"nats_server"`
	OS         string `json:"os"`
}

// RTTFigures are the round trips measured in each round: the median of
// each round's samples, in microseconds.
type RTTFigures struct {
	// RequestReplyUS is a core NATS request to a responder in another
	// process and its reply, through the server: the unit of the time to
	// first chunk.
	RequestReplyUS Spread    `json:"request_reply_us"`
	PingUS         Spread    `json:"ping_us"`
	RoundsRR       []float64 `json:"rounds_request_reply_us"`
	RoundsPing     []float64 `json:"rounds_ping_us"`
}

// LegSummary is one scenario on one path over the rounds.
type LegSummary struct {
	Scenario    string `json:"scenario"`
	Path        string `json:"path"`
	Frames      int    `json:"frames"`
	Concurrency int    `json:"concurrency"`
	// TurnsPerSecond counts completed turns over the leg's wall time.
	TurnsPerSecond Spread `json:"turns_per_second"`
	FirstChunkP50  Spread `json:"first_chunk_p50_ms"`
	FirstChunkP90  Spread `json:"first_chunk_p90_ms"`
	FirstChunkP99  Spread `json:"first_chunk_p99_ms"`
	TotalP50       Spread `json:"total_p50_ms"`
	TotalP90       Spread `json:"total_p90_ms"`
	TotalP99       Spread `json:"total_p99_ms"`
	// CPUPerChunkUS is each process's CPU per streamed chunk, in
	// microseconds: "worker", "nats", "mock", "bare", "raw", "tools".
	CPUPerChunkUS map[string]Spread `json:"cpu_per_chunk_us"`
	Rounds        []LegRound        `json:"rounds"`
}

// LegRound is one round of a leg.
type LegRound struct {
	Turns          int                `json:"turns"`
	Completed      int                `json:"completed"`
	Chunks         int                `json:"chunks"`
	Seconds        float64            `json:"seconds"`
	TurnsPerSecond float64            `json:"turns_per_second"`
	FirstChunkMS   Percentiles        `json:"first_chunk_ms"`
	TotalMS        Percentiles        `json:"total_ms"`
	CPUSeconds     map[string]float64 `json:"cpu_seconds"`
}

// GrowthResult is the session-length leg.
type GrowthResult struct {
	Turns   int           `json:"turns"`
	Seconds float64       `json:"seconds"`
	Points  []GrowthPoint `json:"points"`
	// LatencyMS is every turn's, submit to terminal event.
	LatencyMS []float64     `json:"latency_ms"`
	Delivery  DeliveryCheck `json:"delivery"`
}

// GrowthPoint is the latency around turn Turn (the median of the turns
// up to growthWindow either side) and its ratio to the first turns'.
type GrowthPoint struct {
	Turn      int     `json:"turn"`
	LatencyMS float64 `json:"latency_ms"`
	Ratio     Spread  `json:"ratio"`
	// RatioToFull is the same over turn growthFull's window: a turn whose
	// prompt already fills the model's context window, so that what grows
	// after it is the session's bookkeeping alone.
	RatioToFull *Spread `json:"ratio_to_full,omitempty"`
	// CPUPerTurnMS is each process's mean CPU per turn over the turns up
	// to cpuWindow either side, in milliseconds (/proc counts 10 ms
	// ticks).
	CPUPerTurnMS map[string]float64 `json:"cpu_per_turn_ms,omitempty"`
}

// MemoryResult is the slow-turn legs: the worker's memory with InFlight
// turns in flight, their delivery, and as many pkg/client followers.
type MemoryResult struct {
	InFlight int `json:"in_flight"`
	// Held is how many answers the mock held (turns in flight in the
	// worker) when the worker was sampled.
	Held         int  `json:"held"`
	RampTimedOut bool `json:"ramp_timed_out"`
	// RSS in bytes: the worker idle (after a few turns), with the turns in
	// flight, its peak over both legs; the server's before the turns and
	// with them in flight.
	WorkerIdleRSS int64 `json:"worker_idle_rss"`
	WorkerRSS     int64 `json:"worker_rss"`
	WorkerPeakRSS int64 `json:"worker_peak_rss"`
	ServerIdleRSS int64 `json:"server_idle_rss"`
	ServerRSS     int64 `json:"server_rss"`
	// PerTurnBytes is (WorkerRSS - WorkerIdleRSS) / Held.
	PerTurnBytes float64 `json:"per_turn_bytes"`
	RampSeconds  float64 `json:"ramp_seconds"`
	// DrainSeconds runs from the release to the last turn's end (or the
	// drain timeout).
	DrainSeconds float64 `json:"drain_seconds"`
	// LiveIncomplete counts turns whose live records (one core subscriber
	// of them all) came incomplete within the drain: they were read again
	// from the streams.
	LiveIncomplete int `json:"live_incomplete"`
	// HeldDelivery checks the memory leg's turns, as stored; Delivery
	// every turn of both legs and the warm-up.
	HeldDelivery DeliveryCheck `json:"held_delivery"`
	Delivery     DeliveryCheck `json:"delivery"`
	// Followers are the follower leg's steps, up to the first that did
	// not complete.
	Followers []*FollowerResult `json:"followers,omitempty"`
}

// FollowerResult is the follower leg: Followers turns held in flight at
// once, each submitted and followed through pkg/client.
type FollowerResult struct {
	Followers     int `json:"followers"`
	PerConnection int `json:"per_connection"`
	// AtOnce is how many were following when the turns were released.
	AtOnce int `json:"at_once"`
	// Completed counts followers that got their turn complete.
	Completed  int    `json:"completed"`
	FirstError string `json:"first_error,omitempty"`
	// Reconnects counts the followers' connections' reconnects (a server
	// closes a slow consumer's connection).
	Reconnects int `json:"reconnects"`
	// FollowerProcessRSS is the loadtest process's RSS (the followers')
	// when the turns were released, in bytes.
	FollowerProcessRSS int64 `json:"follower_process_rss"`
	// FollowerProcessPeakRSS and ServerPeakRSS are the largest RSS seen
	// after the release, sampled every 5 seconds.
	FollowerProcessPeakRSS int64 `json:"follower_process_peak_rss"`
	ServerPeakRSS          int64 `json:"server_peak_rss"`
	// Aborted says why the leg was given up early, if it was.
	Aborted      string  `json:"aborted,omitempty"`
	RampSeconds  float64 `json:"ramp_seconds"`
	DrainSeconds float64 `json:"drain_seconds"`
	// Delivery checks the turns as stored (the failed followers' turns
	// read again).
	Delivery DeliveryCheck `json:"delivery"`
}

// Figure is one row of a table.
type Figure struct {
	Name     string `json:"name"`
	Measured Spread `json:"measured"`
	Unit     string `json:"unit,omitempty"`
	Target   string `json:"target,omitempty"`
	// Met is "yes", "no", or "not at size" (a quick profile's smaller
	// count); empty for context figures.
	Met  string `json:"met,omitempty"`
	Note string `json:"note,omitempty"`
	// digits to print.
	digits int
}

func (r *ProfileReport) addRTT(rr, ping []time.Duration) {
	us := func(ds []time.Duration) float64 {
		vs := make([]float64, len(ds))
		for i, d := range ds {
			vs[i] = float64(d) / float64(time.Microsecond)
		}
		slices.Sort(vs)
		return median(vs)
	}
	r.RTT.RoundsRR = append(r.RTT.RoundsRR, us(rr))
	r.RTT.RoundsPing = append(r.RTT.RoundsPing, us(ping))
}

// leg returns the summary of a scenario on a path, adding it if new.
func (r *ProfileReport) leg(sc scenario, path string) *LegSummary {
	for _, l := range r.Legs {
		if l.Scenario == sc.Name && l.Path == path {
			return l
		}
	}
	l := &LegSummary{Scenario: sc.Name, Path: path, Frames: sc.Frames, Concurrency: sc.Concurrency}
	r.Legs = append(r.Legs, l)
	return l
}

// findLeg returns a leg's summary, or nil.
func (r *ProfileReport) findLeg(scenario, path string) *LegSummary {
	for _, l := range r.Legs {
		if l.Scenario == scenario && l.Path == path {
			return l
		}
	}
	return nil
}

// addLeg records one round of a leg.
func (r *ProfileReport) addLeg(sc scenario, path string, res legResult, cpu map[string]float64) {
	var first, total []time.Duration
	completed := 0
	for _, s := range res.samples {
		if s.gotFirst {
			first = append(first, s.first)
		}
		if s.err == nil {
			completed++
			total = append(total, s.total)
		}
	}
	if path == pathBare {
		completed -= res.short
	}
	lr := LegRound{
		Turns: len(res.samples), Completed: completed, Chunks: completed * sc.Frames,
		Seconds: res.elapsed.Seconds(), FirstChunkMS: percentiles(first), TotalMS: percentiles(total),
		CPUSeconds: cpu,
	}
	if lr.Seconds > 0 {
		lr.TurnsPerSecond = float64(completed) / lr.Seconds
	}
	l := r.leg(sc, path)
	l.Rounds = append(l.Rounds, lr)
	if path != pathBare {
		r.Delivery.merge(res.delivery)
	}
}

// cpuPerChunk is a process's CPU per chunk in a round, in microseconds
// (NaN if unmeasured).
func (lr LegRound) cpuPerChunk(role string) float64 {
	cpu, ok := lr.CPUSeconds[role]
	if !ok || lr.Chunks == 0 {
		return math.NaN()
	}
	return cpu * 1e6 / float64(lr.Chunks)
}

// summarize fills a leg's spreads from its rounds.
func (l *LegSummary) summarize() {
	over := func(f func(LegRound) float64) Spread {
		vs := make([]float64, len(l.Rounds))
		for i, lr := range l.Rounds {
			vs[i] = f(lr)
		}
		return spreadOf(vs)
	}
	l.TurnsPerSecond = over(func(lr LegRound) float64 { return lr.TurnsPerSecond })
	// A round with no samples measured nothing (not zero).
	pct := func(p Percentiles, v float64) float64 {
		if p.N == 0 {
			return math.NaN()
		}
		return v
	}
	l.FirstChunkP50 = over(func(lr LegRound) float64 { return pct(lr.FirstChunkMS, lr.FirstChunkMS.P50) })
	l.FirstChunkP90 = over(func(lr LegRound) float64 { return pct(lr.FirstChunkMS, lr.FirstChunkMS.P90) })
	l.FirstChunkP99 = over(func(lr LegRound) float64 { return pct(lr.FirstChunkMS, lr.FirstChunkMS.P99) })
	l.TotalP50 = over(func(lr LegRound) float64 { return pct(lr.TotalMS, lr.TotalMS.P50) })
	l.TotalP90 = over(func(lr LegRound) float64 { return pct(lr.TotalMS, lr.TotalMS.P90) })
	l.TotalP99 = over(func(lr LegRound) float64 { return pct(lr.TotalMS, lr.TotalMS.P99) })
	l.CPUPerChunkUS = map[string]Spread{}
	for _, role := range []string{roleWorker, roleNATS, roleMock, roleBare, roleRaw} {
		l.CPUPerChunkUS[role] = over(func(lr LegRound) float64 { return lr.cpuPerChunk(role) })
	}
}

// perRound is f over the rounds both legs ran, as a Spread.
func perRound(a, b *LegSummary, f func(a, b LegRound, round int) float64) Spread {
	if a == nil || b == nil {
		return spreadOf(nil)
	}
	n := min(len(a.Rounds), len(b.Rounds))
	vs := make([]float64, n)
	for i := range n {
		vs[i] = f(a.Rounds[i], b.Rounds[i], i)
	}
	return spreadOf(vs)
}

// finish computes the spreads and the figures.
func (r *ProfileReport) finish() {
	r.Figures, r.Context = nil, nil
	r.RTT.RequestReplyUS = spreadOf(r.RTT.RoundsRR)
	r.RTT.PingUS = spreadOf(r.RTT.RoundsPing)
	for _, l := range r.Legs {
		l.summarize()
	}
	rtt := func(i int) float64 {
		if i < len(r.RTT.RoundsRR) {
			return r.RTT.RoundsRR[i] / 1000 // ms
		}
		return math.NaN()
	}
	cpuRatio := func(path string, roles ...string) Spread {
		return perRound(r.findLeg("70x8", path), r.findLeg("70x8", pathBare), func(a, b LegRound, _ int) float64 {
			sum := 0.0
			for _, role := range roles {
				sum += a.cpuPerChunk(role)
			}
			return ratio(sum, b.cpuPerChunk(roleBare))
		})
	}
	ttfc := func(path string) Spread {
		return perRound(r.findLeg("16x1", path), r.findLeg("16x1", pathBare), func(a, b LegRound, i int) float64 {
			if a.FirstChunkMS.N == 0 || b.FirstChunkMS.N == 0 {
				return math.NaN() // no first chunk: nothing measured
			}
			return ratio(a.FirstChunkMS.P50-b.FirstChunkMS.P50, rtt(i))
		})
	}
	tps := func(sc, path string) Spread {
		return perRound(r.findLeg(sc, path), r.findLeg(sc, pathBare), func(a, b LegRound, _ int) float64 {
			return ratio(a.TurnsPerSecond, b.TurnsPerSecond)
		})
	}
	atMost := func(limit float64) func(float64) bool { return func(v float64) bool { return v <= limit } }
	atLeast := func(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }
	fig := func(name string, s Spread, unit, target string, ok func(float64) bool, digits int) Figure {
		f := Figure{Name: name, Measured: s, Unit: unit, Target: target, digits: digits}
		switch {
		case ok == nil:
		case math.IsNaN(s.Median):
			f.Met = "not measured"
		case ok(s.Median):
			f.Met = "yes"
		default:
			f.Met = "no"
		}
		return f
	}
	one := func(v float64) Spread { return spreadOf([]float64{v}) }

	r.Figures = []Figure{
		fig("worker CPU per chunk ÷ bare client (70-chunk turns, 8 in flight)", cpuRatio(pathCore, roleWorker), "×", "≤1.2", atMost(1.2), 2),
		fig("(worker + nats-server) CPU per chunk ÷ bare client", cpuRatio(pathCore, roleWorker, roleNATS), "×", "≤1.6", atMost(1.6), 2),
		fig("added time to first chunk, p50, core subscriber", ttfc(pathCore), "round trips", "≤2.5 round trips", atMost(2.5), 1),
		fig("added time to first chunk via pkg/client", ttfc(pathClient), "round trips", "≤3 round trips", atMost(3), 1),
		fig("turns/s at 8 in flight ÷ bare (16-chunk turns)", tps("16x8", pathCore), "×", "≥0.55", atLeast(0.55), 2),
		fig("turns/s at 1 in flight ÷ bare", tps("16x1", pathCore), "×", "≥0.5", atLeast(0.5), 2),
		fig("turns/s at 8 in flight through pkg/client ÷ bare", tps("16x8", pathClient), "×", "≥0.5", atLeast(0.5), 2),
	}
	r.Context = []Figure{
		fig("round trip: core NATS request/reply to another process (the unit above)", r.RTT.RequestReplyUS, "µs", "", nil, 0),
		fig("round trip: PING (nats.Conn.RTT)", r.RTT.PingUS, "µs", "", nil, 0),
		fig("raw NATS CPU per chunk ÷ bare client (70x8)", cpuRatio(pathRaw, roleRaw), "×", "", nil, 2),
		fig("(raw NATS + nats-server) CPU per chunk ÷ bare client (70x8)", cpuRatio(pathRaw, roleRaw, roleNATS), "×", "", nil, 2),
		fig("(worker + nats-server) CPU per chunk ÷ bare client, pkg/client followers (70x8)", cpuRatio(pathClient, roleWorker, roleNATS), "×", "", nil, 2),
		fig("added time to first chunk, p50, raw NATS", ttfc(pathRaw), "round trips", "", nil, 1),
		fig("turns/s at 8 in flight ÷ bare, raw NATS (16x8)", tps("16x8", pathRaw), "×", "", nil, 2),
		fig("turns/s at 1 in flight ÷ bare, raw NATS (16x1)", tps("16x1", pathRaw), "×", "", nil, 2),
		fig("turns/s at 1 in flight ÷ bare, pkg/client (16x1)", tps("16x1", pathClient), "×", "", nil, 2),
		fig("turns/s at 8 in flight ÷ bare, 70-chunk turns, core subscriber (70x8)", tps("70x8", pathCore), "×", "", nil, 2),
	}
	for _, sc := range scenarios {
		for _, path := range paths {
			if l := r.findLeg(sc.Name, path); l != nil {
				r.Context = append(r.Context,
					fig(fmt.Sprintf("turns/s, %s, %s", sc.Name, pathNames[path]), l.TurnsPerSecond, "turns/s", "", nil, 0),
					fig(fmt.Sprintf("first chunk p50, %s, %s", sc.Name, pathNames[path]), l.FirstChunkP50, "ms", "", nil, 3))
			}
		}
	}

	if m := r.Memory; m != nil {
		per := math.NaN()
		if m.Held > 0 {
			per = m.PerTurnBytes / 1024
		}
		f := fig(fmt.Sprintf("worker RSS per in-flight turn, %d slow turns", m.InFlight), one(per), "KiB", "≤64 KiB", atMost(64), 1)
		if m.Held < m.InFlight {
			f.Note = fmt.Sprintf("only %d of %d in flight when sampled", m.Held, m.InFlight)
		}
		r.Figures = append(r.Figures, f)
		r.Context = append(r.Context,
			fig("worker RSS idle", one(float64(m.WorkerIdleRSS)/(1<<20)), "MiB", "", nil, 1),
			fig(fmt.Sprintf("worker RSS, %d turns in flight", m.Held), one(float64(m.WorkerRSS)/(1<<20)), "MiB", "", nil, 1),
			fig("worker peak RSS (VmHWM)", one(float64(m.WorkerPeakRSS)/(1<<20)), "MiB", "", nil, 1),
			fig(fmt.Sprintf("nats-server RSS, %d turns in flight", m.Held), one(float64(m.ServerRSS)/(1<<20)), "MiB", "", nil, 1),
			fig(fmt.Sprintf("time to put %d turns in flight", m.InFlight), one(m.RampSeconds), "s", "", nil, 1),
			fig("memory leg: time from the release to the last turn's end", one(m.DrainSeconds), "s", "", nil, 1),
			fig("memory leg: turns whose live records came incomplete (read again from the streams)", one(float64(m.LiveIncomplete)), "", "", nil, 0),
		)
	}
	if g := r.Growth; g != nil {
		for _, pt := range g.Points {
			if pt.Turn == 1 {
				r.Context = append(r.Context, fig("session turn 1 latency (tools, submit to terminal)", one(pt.LatencyMS), "ms", "", nil, 1))
				continue
			}
			name := fmt.Sprintf("latency of turn %d of a session ÷ turn 1 (with tools)", pt.Turn)
			cf := fig(fmt.Sprintf("session turn %d: worker CPU per turn", pt.Turn), one(pt.CPUPerTurnMS[roleWorker]), "ms", "", nil, 1)
			cf.Note = "worker / nats-server / mock / tools: " + cpuNote(pt.CPUPerTurnMS) + "; turns 1-11: " + cpuNote(g.Points[0].CPUPerTurnMS)
			r.Context = append(r.Context, cf)
			if pt.Turn == 200 || pt.Turn == 1000 {
				f := fig(name, pt.Ratio, "×", "≤1.2×", atMost(1.2), 2)
				f.Note = "median of turns ±2 [their min and max]"
				r.Figures = append(r.Figures, f)
			} else {
				r.Context = append(r.Context, fig(name, pt.Ratio, "×", "", nil, 2))
			}
			if pt.RatioToFull != nil {
				f := fig(fmt.Sprintf("latency of turn %d ÷ turn %d (the prompt at the model's context window since turn ~70)", pt.Turn, growthFull), *pt.RatioToFull, "×", "", nil, 2)
				f.Note = "what the session's length adds to a turn's bookkeeping"
				r.Context = append(r.Context, f)
			}
		}
		if g.Turns < 1000 {
			r.Figures = append(r.Figures, Figure{Name: "latency of turn 1000 of a session ÷ turn 1", Target: "≤1.2× (measure to turn 1000)",
				Met: "not at size", Note: fmt.Sprintf("this profile's session has %d turns", g.Turns), Measured: spreadOf(nil)})
		}
	}
	if m := r.Memory; m != nil {
		if steps := m.Followers; len(steps) > 0 {
			best, last := 0, steps[len(steps)-1]
			for _, fl := range steps {
				if fl.Completed == fl.Followers {
					best = max(best, fl.Followers)
				}
			}
			f := fig(fmt.Sprintf("turns followed at once (pkg/client, %d a connection), steps %s", last.PerConnection, stepList(steps)),
				one(float64(best)), "followers, all complete", "no ceiling; 10,000 in a test", nil, 0)
			switch {
			case last.Completed < last.Followers:
				f.Met = "no"
				f.Note = fmt.Sprintf("%d followed at once: %d complete", last.AtOnce, last.Completed)
				if last.Aborted != "" {
					f.Note += "; gave up: " + last.Aborted
				}
				if last.FirstError != "" {
					f.Note += "; first failure: " + last.FirstError
				}
			case best < 10_000:
				f.Met = "not at size"
			default:
				f.Met = "yes"
			}
			r.Figures = append(r.Figures, f)
			for _, fl := range steps {
				name := fmt.Sprintf("follower leg, %d followers: ", fl.Followers)
				r.Context = append(r.Context,
					fig(name+"loadtest process RSS with the followers attached", one(float64(fl.FollowerProcessRSS)/(1<<20)), "MiB", "", nil, 0),
					fig(name+"nats-server peak RSS after the release", one(float64(fl.ServerPeakRSS)/(1<<20)), "MiB", "", nil, 0),
					fig(name+"time from the release to the last follower's end", one(fl.DrainSeconds), "s", "", nil, 1),
					fig(name+"follower connections' reconnects", one(float64(fl.Reconnects)), "", "", nil, 0),
				)
				r.Context[len(r.Context)-4].Note = fmt.Sprintf("peak %.0f MiB", float64(fl.FollowerProcessPeakRSS)/(1<<20))
				if d := fl.Delivery; !d.Exact() {
					r.Context[len(r.Context)-1].Note = fmt.Sprintf("turns as stored: %d of %d complete, %d re-run, %d lost markers, %d not completed", d.Complete, d.Turns, d.Reruns, d.LostMarkers, d.NotCompleted)
				}
			}
		}
		d := m.HeldDelivery
		f := fig(fmt.Sprintf("delivery at %d in flight (complete, %%)", m.InFlight), one(100*float64(d.Complete)/float64(max(d.Turns, 1))), "%", "exactly 100%, nothing re-run", nil, 3)
		f.Note = fmt.Sprintf("%d of %d complete; %d re-run, %d lost markers, %d gaps, %d not completed", d.Complete, d.Turns, d.Reruns, d.LostMarkers, d.Gaps, d.NotCompleted)
		switch {
		case !d.Exact():
			f.Met = "no"
		case m.InFlight < 10_000:
			f.Met = "not at size"
		default:
			f.Met = "yes"
		}
		r.Figures = append(r.Figures, f)
	}
	d := r.totalDelivery()
	f := fig("delivery, every turn of the run (must be exact)", one(100*float64(d.Complete)/float64(max(d.Turns, 1))), "%", "exactly 100%", nil, 3)
	f.Note = fmt.Sprintf("%d of %d complete; %d re-run, %d lost markers, %d gaps, %d terminal, %d lost accepted",
		d.Complete, d.Turns, d.Reruns, d.LostMarkers, d.Gaps, d.Terminals, d.LostEvents)
	f.Met = map[bool]string{true: "yes", false: "no"}[d.Exact()]
	r.Figures = append(r.Figures, f)
	if a := r.Audit; a != nil {
		f := fig("stored: turns accepted once at their first delivery and ended once, every request settled", one(100*float64(a.Exact)/float64(max(a.Turns, 1))), "%", "exactly 100%, nothing redelivered", nil, 3)
		f.Note = fmt.Sprintf("%d of %d turns; %d requests redelivered, %d unsettled", a.Exact, a.Turns, a.Redelivered, a.Unsettled)
		if len(a.Problems) > 0 {
			f.Note += "; first: " + a.Problems[0]
		}
		f.Met = map[bool]string{true: "yes", false: "no"}[a.OK()]
		r.Figures = append(r.Figures, f)
	}
}

func stepList(steps []*FollowerResult) string {
	var parts []string
	for _, s := range steps {
		parts = append(parts, fmt.Sprint(s.Followers))
	}
	return strings.Join(parts, ", ")
}

func cpuNote(c map[string]float64) string {
	return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f ms", c[roleWorker], c[roleNATS], c[roleMock], c[roleTools])
}

// totalDelivery is every check of the run.
func (r *ProfileReport) totalDelivery() DeliveryCheck {
	d := r.Delivery
	if r.Growth != nil {
		d.merge(r.Growth.Delivery)
	}
	if r.Memory != nil {
		d.merge(r.Memory.Delivery)
	}
	return d
}

// OK reports whether every turn of the run was delivered completely.
func (r *ProfileReport) OK() bool { return r.totalDelivery().Exact() && r.Audit.OK() }

// formatSpread prints "median [min–max]".
func formatSpread(s Spread, digits int) string {
	if s.N == 0 || math.IsNaN(s.Median) {
		return "—"
	}
	f := func(v float64) string { return fmt.Sprintf("%.*f", digits, v) }
	if s.N == 1 || s.Min == s.Max {
		return f(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", f(s.Median), f(s.Min), f(s.Max))
}

// WriteMarkdown writes the table and the context figures.
func (r *ProfileReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "turnstream load test, profile %s: %d rounds, %d CPUs, %s, nats-server %s, %s, %s; %.0f s\n\n",
		r.Profile, r.Config.Rounds, m.CPUs, m.GoVersion, m.NATSServer, m.OS, r.Date, r.Seconds)
	b.WriteString("| figure | measured median [min–max] | target | met? |\n|---|---|---|---|\n")
	for _, f := range r.Figures {
		writeRow(&b, f, true)
	}
	b.WriteString("\n| context | measured median [min–max] | note |\n|---|---|---|\n")
	for _, f := range r.Context {
		writeRow(&b, f, false)
	}
	d := r.totalDelivery()
	fmt.Fprintf(&b, "\ndelivery: %d of %d turns complete (%d re-run, %d lost markers, %d gaps, %d terminal problems, %d lost turn.accepted, %d not completed); %d core-subscriber turns read from the streams after a live gap\n",
		d.Complete, d.Turns, d.Reruns, d.LostMarkers, d.Gaps, d.Terminals, d.LostEvents, d.NotCompleted, r.LiveGaps)
	for _, p := range d.Problems {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeRow(b *strings.Builder, f Figure, withTarget bool) {
	v := formatSpread(f.Measured, f.digits)
	if v != "—" && f.Unit != "" && f.Unit != "×" {
		v += " " + f.Unit
	} else if v != "—" && f.Unit == "×" {
		v += "×"
	}
	note := f.Note
	if withTarget {
		met := f.Met
		if note != "" {
			met += " (" + note + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", f.Name, v, f.Target, met)
		return
	}
	fmt.Fprintf(b, "| %s | %s | %s |\n", f.Name, v, note)
}

// WriteJSON writes the report as indented JSON. Figures not measured are
// null.
func (r *ProfileReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MarshalJSON writes a Spread with null for NaN.
func (s Spread) MarshalJSON() ([]byte, error) {
	num := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	return json.Marshal(map[string]any{"median": num(s.Median), "min": num(s.Min), "max": num(s.Max), "n": s.N})
}
