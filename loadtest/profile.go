package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/demotools"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// ProfileOptions configure a profile run (--profile): every figure of
// issue 11's table, with the bare-client and raw-NATS baselines in the
// same run, each part in a process of its own. Zero fields take the quick
// profile's values (QuickProfile).
type ProfileOptions struct {
	// Name names the profile in the report ("quick", "full", "custom").
	Name string
	// Rounds is how many interleaved rounds run the timed legs. Each
	// round runs every path of every scenario once, in a rotated order.
	Rounds int
	// CPUTurns is the turns of the CPU scenario (70-chunk text turns, 8 in
	// flight) per path and round.
	CPUTurns int
	// ThroughputTurns is the turns of the 16-chunk scenario at 8 in flight
	// per path and round; SerialTurns at 1 in flight.
	ThroughputTurns int
	SerialTurns     int
	// FrameLatency is the mock provider's delay before each streamed
	// frame. Default 0: the figures measure what the parts cost, not the
	// provider's pace.
	FrameLatency time.Duration
	// RTTSamples is how many round trips are timed per round. Default 200.
	RTTSamples int
	// SessionTurns is the length of the one session of the growth leg
	// (turns with the demo tools, one after the other).
	SessionTurns int
	// ContextTokens is the mock model's context window. The session's
	// prompt stops growing once its history fills the window (what is
	// left out is summarized in a notice), so that the growth leg
	// measures what the session's length costs a turn's bookkeeping, not
	// a longer prompt, which costs the bare client as much. Default 8000
	// (its history fills it at about turn 70).
	ContextTokens int
	// InFlight is how many slow turns are in flight at once in the memory
	// leg, each followed by core subscriptions (its stored records read
	// again if they came incomplete).
	InFlight int
	// FollowerSteps are the follower counts of the follower leg, tried in
	// order until one does not complete. Default: InFlight alone.
	FollowerSteps []int
	// RampTimeout bounds the wait for all InFlight turns to be in flight.
	RampTimeout time.Duration
	// DrainTimeout bounds the wait, once the slow turns are released, for
	// every follower to reach its turn's end; a follower still waiting
	// then fails (and its turn counts as not delivered).
	DrainTimeout time.Duration
	// TurnTimeout bounds one turn of the timed legs and the session. Default 2m.
	TurnTimeout time.Duration
	// Log receives progress. Default: none.
	Log zerolog.Logger
}

// defaultContextTokens is ProfileOptions.ContextTokens's default.
const defaultContextTokens = 8000

// QuickProfile finishes in under 5 minutes on 2 cores.
var QuickProfile = ProfileOptions{
	Name: "quick", Rounds: 3, CPUTurns: 500, ThroughputTurns: 800, SerialTurns: 300,
	RTTSamples: 200, SessionTurns: 200, InFlight: 1000, FollowerSteps: []int{1000},
	RampTimeout: 2 * time.Minute, DrainTimeout: 3 * time.Minute,
}

// FullProfile measures at the sizes: 10,000 turns in flight, a
// 1000-turn session.
var FullProfile = ProfileOptions{
	Name: "full", Rounds: 5, CPUTurns: 800, ThroughputTurns: 1500, SerialTurns: 500,
	RTTSamples: 200, SessionTurns: 1000, InFlight: 10_000, FollowerSteps: []int{2500, 5000, 10_000},
	RampTimeout: 5 * time.Minute, DrainTimeout: 10 * time.Minute,
}

// profileByName returns a named profile.
func profileByName(name string) (ProfileOptions, error) {
	switch name {
	case "quick":
		return QuickProfile, nil
	case "full":
		return FullProfile, nil
	}
	return ProfileOptions{}, fmt.Errorf("loadtest: --profile %q: want quick or full", name)
}

func (o *ProfileOptions) applyDefaults() {
	q := QuickProfile
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if o.Name == "" {
		o.Name = "custom"
	}
	def(&o.Rounds, q.Rounds)
	def(&o.CPUTurns, q.CPUTurns)
	def(&o.ThroughputTurns, q.ThroughputTurns)
	def(&o.SerialTurns, q.SerialTurns)
	def(&o.RTTSamples, q.RTTSamples)
	def(&o.SessionTurns, q.SessionTurns)
	def(&o.InFlight, q.InFlight)
	def(&o.ContextTokens, defaultContextTokens)
	if o.RampTimeout == 0 {
		o.RampTimeout = q.RampTimeout
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = q.DrainTimeout
	}
	if len(o.FollowerSteps) == 0 {
		o.FollowerSteps = []int{o.InFlight}
	}
	if o.TurnTimeout == 0 {
		o.TurnTimeout = defaultTurnTimeout
	}
}

// Validate reports settings out of range; every loop is bounded by them.
func (o *ProfileOptions) Validate() error {
	for _, v := range append([]int{o.Rounds, o.CPUTurns, o.ThroughputTurns, o.SerialTurns, o.RTTSamples, o.SessionTurns, o.InFlight}, o.FollowerSteps...) {
		if v < 1 || v > 100_000 {
			return errors.New("loadtest: profile counts must be 1 to 100000")
		}
	}
	if o.ContextTokens < 1000 || o.ContextTokens > 10_000_000 {
		return errors.New("loadtest: the profile's context window must be 1000 to 10,000,000 tokens")
	}
	if o.FrameLatency < 0 || o.RampTimeout < 0 || o.DrainTimeout < 0 || o.TurnTimeout < 0 {
		return errors.New("loadtest: profile durations must not be negative")
	}
	return nil
}

// The scenarios of the timed legs.
type scenario struct {
	Name                string
	Frames, Concurrency int
	turns               func(o ProfileOptions) int
}

var scenarios = []scenario{
	{"70x8", 70, 8, func(o ProfileOptions) int { return o.CPUTurns }},
	{"16x8", 16, 8, func(o ProfileOptions) int { return o.ThroughputTurns }},
	{"16x1", 16, 1, func(o ProfileOptions) int { return o.SerialTurns }},
}

// profileRun is a running profile: the children and the coordinator's
// connection.
type profileRun struct {
	o        ProfileOptions
	runID    string
	procs    map[string]*child
	nc       *nats.Conn
	js       jetstream.JetStream
	cl       *client.Client
	subjects wire.Subjects
	mockURL  string
	natsURL  string
	storeDir string
	liveGaps atomic.Int64
	// died ends the run when a child dies (child.watch).
	died context.CancelCauseFunc

	mu   sync.Mutex
	legs int
}

// RunProfile runs a profile and returns its report. The report is
// returned, as far as it got, with any error.
func RunProfile(ctx context.Context, o ProfileOptions) (rep *ProfileReport, err error) {
	o.applyDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	// A child that dies ends the run at once, with what it said, instead
	// of every remaining turn waiting out its timeout.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &profileRun{o: o, runID: nuid.Next()[:8], procs: map[string]*child{}, died: cancel}
	defer p.stopAll()
	defer func() {
		if cause := context.Cause(ctx); err != nil && cause != nil && cause != err && !errors.Is(cause, context.Canceled) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
	}()
	rep = &ProfileReport{
		Profile: o.Name, Date: started.UTC().Format(time.DateOnly),
		Config: ProfileConfig{
			Rounds: o.Rounds, CPUTurns: o.CPUTurns, ThroughputTurns: o.ThroughputTurns, SerialTurns: o.SerialTurns,
			FrameLatencyMS: ms(o.FrameLatency), SessionTurns: o.SessionTurns, ContextTokens: o.ContextTokens, InFlight: o.InFlight,
		},
		Machine: Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), NATSServer: server.VERSION, OS: runtime.GOOS + "/" + runtime.GOARCH},
	}
	defer func() {
		rep.Seconds = time.Since(started).Seconds()
		rep.LiveGaps = int(p.liveGaps.Load())
	}()
	if err := p.start(ctx); err != nil {
		return rep, err
	}
	o.Log.Info().Msg("warming up")
	if err := p.warmUp(ctx, rep); err != nil {
		return rep, err
	}
	for r := range o.Rounds {
		o.Log.Info().Int("round", r+1).Int("of", o.Rounds).Msg("round")
		if err := p.round(ctx, r, rep); err != nil {
			return rep, err
		}
	}
	o.Log.Info().Int("turns", o.SessionTurns).Msg("session growth")
	if rep.Growth, err = p.growth(ctx); err != nil {
		return rep, err
	}
	if rep.Memory, err = p.slowLegs(ctx); err != nil {
		return rep, err
	}
	o.Log.Info().Msg("audit of what was stored")
	if rep.Audit, err = p.audit(ctx); err != nil {
		return rep, err
	}
	rep.finish()
	return rep, nil
}

// start brings up the server, the mock, the worker, the tools and both
// baselines, each in its own process.
func (p *profileRun) start(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "turnstream-loadtest-*")
	if err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	p.storeDir = dir
	srv, err := p.startChild(ctx, roleNATS, childConfig{StoreDir: dir})
	if err != nil {
		return err
	}
	p.procs[roleNATS] = srv
	p.natsURL = srv.ready.URL
	mock, err := p.startChild(ctx, roleMock, childConfig{FrameLatency: p.o.FrameLatency, HoldMax: p.o.RampTimeout + time.Minute})
	if err != nil {
		return err
	}
	p.procs[roleMock] = mock
	p.mockURL = mock.ready.URL
	if err := p.startWorker(ctx, 0, 0); err != nil {
		return err
	}
	if p.nc, err = nats.Connect(p.natsURL, nats.Name("turnstream loadtest")); err != nil {
		return fmt.Errorf("loadtest: connect: %w", err)
	}
	if p.js, err = jetstream.New(p.nc); err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	if p.cl, err = client.New(p.nc); err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	if err := rawStreams(ctx, p.js); err != nil {
		return err
	}
	for _, role := range []string{roleTools, roleRaw, roleBare} {
		c, err := p.startChild(ctx, role, childConfig{NATSURL: p.natsURL, MockURL: p.mockURL})
		if err != nil {
			return err
		}
		p.procs[role] = c
	}
	return nil
}

// startChild starts a child that ends the run if it dies.
func (p *profileRun) startChild(ctx context.Context, role string, c childConfig) (*child, error) {
	ch, err := startChild(ctx, role, c)
	if err != nil {
		return nil, err
	}
	ch.watch(func(err error) { p.died(err) })
	return ch, nil
}

// startWorker starts a worker process with the given concurrency and turn
// bound (0: the defaults) and waits for it to be ready (built, its topology ensured).
func (p *profileRun) startWorker(ctx context.Context, concurrency int, bound time.Duration) error {
	w, err := p.startChild(ctx, roleWorker, childConfig{NATSURL: p.natsURL, MockURL: p.mockURL, Concurrency: concurrency, TurnBound: bound, ContextTokens: p.o.ContextTokens})
	if err != nil {
		return err
	}
	p.procs[roleWorker] = w
	return nil
}

// stopAll stops every child, the worker and the tools first, the server
// last, and removes the store.
func (p *profileRun) stopAll() {
	if p.nc != nil {
		p.nc.Close()
	}
	closeIdleHTTP() // the mock's control requests
	for _, role := range []string{roleBare, roleRaw, roleTools, roleWorker, roleMock, roleNATS} {
		if c := p.procs[role]; c != nil {
			c.stop()
		}
	}
	if p.storeDir != "" {
		os.RemoveAll(p.storeDir) //nolint:errcheck // best effort
	}
}

// warmUp runs a few turns on every path, so that connections, caches and
// the processes' heaps are in use before anything is timed. Their
// delivery is checked too.
func (p *profileRun) warmUp(ctx context.Context, rep *ProfileReport) error {
	for _, path := range paths {
		res, err := p.runLeg(ctx, path, 16, 32, 8)
		if err != nil {
			return err
		}
		if err := p.legFailed(path, "warm-up", res); err != nil {
			return err
		}
		rep.Delivery.merge(res.delivery)
	}
	return nil
}

// legFailed reports a leg whose turns did not all complete on the bare
// path (which has no delivery check).
func (p *profileRun) legFailed(path, what string, res legResult) error {
	if path == pathBare && res.short > 0 {
		return fmt.Errorf("loadtest: %s: the bare client got %d short turns: %s", what, res.short, res.firstErr)
	}
	return nil
}

// round runs one round: the round trips, then every scenario on every
// path, the paths in an order rotated by the round number.
func (p *profileRun) round(ctx context.Context, r int, rep *ProfileReport) error {
	rr, ping, err := p.measureRTT(ctx, p.o.RTTSamples)
	if err != nil {
		return err
	}
	rep.addRTT(rr, ping)
	for _, sc := range scenarios {
		for j := range paths {
			path := paths[(j+r)%len(paths)]
			turns := sc.turns(p.o)
			before, err := p.sampleAll()
			if err != nil {
				return err
			}
			res, err := p.runLeg(ctx, path, sc.Frames, turns, sc.Concurrency)
			if err != nil {
				return err
			}
			after, err := p.sampleAll()
			if err != nil {
				return err
			}
			if err := p.legFailed(path, sc.Name, res); err != nil {
				return err
			}
			rep.addLeg(sc, path, res, cpuDelta(before, after))
			p.o.Log.Debug().Str("scenario", sc.Name).Str("path", path).Dur("elapsed", res.elapsed).Msg("leg")
		}
	}
	return nil
}

// growthPoints are the turns of the session whose latency is compared
// with the first's.
var growthPoints = []int{1, 10, 100, 200, 1000}

// growthWindow is how many turns around a point make its latency (their
// median): the point and up to two either side. cpuWindow is the same for
// its CPU per turn, wider, as /proc counts CPU in 10 ms ticks.
const (
	growthWindow = 2
	cpuWindow    = 10
)

// growthFull is the turn whose latency the later points are compared
// with as well: by then the session's prompt fills the mock model's
// context window (ProfileOptions.ContextTokens), so what grows after it
// is the bookkeeping.
const growthFull = 100

// growth runs one session of SessionTurns turns with the demo tools, one
// after the other, each followed through pkg/client, and compares the
// latency (submit to terminal event) at growthPoints with the first
// turns'.
func (p *profileRun) growth(ctx context.Context) (*GrowthResult, error) {
	g := &GrowthResult{Turns: p.o.SessionTurns}
	session := "lt-" + p.runID + "-session"
	lat := make([]float64, 0, p.o.SessionTurns)
	cpu := make([]map[string]float64, 0, p.o.SessionTurns)
	start := time.Now()
	for k := 1; k <= p.o.SessionTurns; k++ {
		before, err := p.sampleAll()
		if err != nil {
			return g, err
		}
		req := wire.TurnRequest{
			SessionID: session, TurnID: fmt.Sprintf("t%05d", k),
			Input: []wire.InputMessage{{Role: wire.RoleUser, Content: fmt.Sprintf("Turn %d: what time is it, and what is 17 * 23?", k)}},
			Tools: demotools.Tools(),
		}
		s, r := p.clientTurn(ctx, p.cl, req)
		after, err := p.sampleAll()
		if err != nil {
			return g, err
		}
		cpu = append(cpu, cpuDelta(before, after))
		g.Delivery.add(r)
		if err := ctx.Err(); err != nil {
			return g, err
		}
		if s.err != nil {
			return g, fmt.Errorf("loadtest: session turn %d: %w", k, s.err)
		}
		lat = append(lat, ms(s.total))
	}
	g.Seconds = time.Since(start).Seconds()
	g.LatencyMS = lat
	g.Points = growthOf(lat, growthPoints, 1)
	if full := growthOf(lat, growthPoints, growthFull); len(full) == len(g.Points) {
		for i := range g.Points {
			if g.Points[i].Turn > growthFull {
				g.Points[i].RatioToFull = &full[i].Ratio
			}
		}
	}
	for i := range g.Points {
		g.Points[i].CPUPerTurnMS = windowCPU(cpu, g.Points[i].Turn)
	}
	return g, nil
}

// growthOf compares the latency at each point (1-based turn numbers up to
// len(lat)) with that around turn base: the median of the window around
// the point over that of the window around base, with the window's min
// and max over the same.
func growthOf(lat []float64, points []int, base int) []GrowthPoint {
	window := func(k int) []float64 {
		lo, hi := max(k-growthWindow, 1), min(k+growthWindow, len(lat))
		w := slices.Clone(lat[lo-1 : hi])
		slices.Sort(w)
		return w
	}
	if len(lat) == 0 || base > len(lat) {
		return nil
	}
	baseMS := median(window(base))
	var out []GrowthPoint
	for _, k := range points {
		if k > len(lat) {
			continue
		}
		w := window(k)
		out = append(out, GrowthPoint{
			Turn: k, LatencyMS: median(w),
			Ratio: Spread{Median: ratio(median(w), baseMS), Min: ratio(w[0], baseMS), Max: ratio(w[len(w)-1], baseMS), N: len(w)},
		})
	}
	return out
}

// windowCPU is each process's mean CPU per turn, in milliseconds, over
// the turns up to cpuWindow either side of turn k.
func windowCPU(cpu []map[string]float64, k int) map[string]float64 {
	lo, hi := max(k-cpuWindow, 1), min(k+cpuWindow, len(cpu))
	out := map[string]float64{}
	for _, c := range cpu[lo-1 : hi] {
		for role, sec := range c {
			out[role] += sec * 1000 / float64(hi-lo+1)
		}
	}
	return out
}

// mockControl posts to one of the mock's control endpoints.
func (p *profileRun) mockControl(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.mockBase()+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("loadtest: mock %s: %w", path, err)
	}
	resp.Body.Close() //nolint:errcheck // nothing to read
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadtest: mock %s: %s", path, resp.Status)
	}
	return nil
}

// mockHeld asks the mock how many answers it holds.
func (p *profileRun) mockHeld(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.mockBase()+mockHeldPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("loadtest: mock held: %w", err)
	}
	defer resp.Body.Close()
	var h mockHeld
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return 0, fmt.Errorf("loadtest: mock held: %w", err)
	}
	return h.Held, nil
}

// mockBase is the mock's root URL (its provider base URL ends in /v1).
func (p *profileRun) mockBase() string {
	u := p.mockURL
	if len(u) > 3 && u[len(u)-3:] == "/v1" {
		u = u[:len(u)-3]
	}
	return u
}
