package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The paths a leg's turns take, each measured in every round.
const (
	// pathBare is the bare openai-go client reading the mock's stream in a
	// process of its own: the baseline.
	pathBare = "bare"
	// pathRaw is openai-go plus bare JetStream async publishes of each
	// frame and chunk, followed by a core subscriber of the republished
	// chunks: the raw-NATS baseline.
	pathRaw = "raw"
	// pathCore is turnstream followed by a core NATS subscriber of the
	// turn's live chunks and its session's live events, subscribed before
	// the submit.
	pathCore = "core"
	// pathClient is turnstream followed through pkg/client (Submit, Next).
	pathClient = "client"
)

var paths = []string{pathBare, pathRaw, pathCore, pathClient}

// pathNames describe the paths in reports.
var pathNames = map[string]string{
	pathBare:   "bare openai-go client",
	pathRaw:    "raw NATS (openai-go + JetStream publish)",
	pathCore:   "turnstream, core subscriber",
	pathClient: "turnstream, pkg/client",
}

// turnSample is what one turn measured.
type turnSample struct {
	first, total time.Duration
	gotFirst     bool
	err          error
}

// legResult is one leg of one round: a path's turns of one scenario.
type legResult struct {
	samples []turnSample
	elapsed time.Duration
	// delivery checks the records the followers received (not for the
	// bare path, which checks its chunk counts itself: short counts it).
	delivery DeliveryCheck
	short    int
	firstErr string
}

// followTimeout bounds a core subscriber's wait for a turn's last
// records after its terminal event.
const followTimeout = 5 * time.Second

// runLeg runs turns text turns of frames chunks on path, concurrency at a
// time.
func (p *profileRun) runLeg(ctx context.Context, path string, frames, turns, concurrency int) (legResult, error) {
	if path == pathBare {
		return p.bareLeg(ctx, frames, turns, concurrency)
	}
	var res legResult
	res.samples = make([]turnSample, turns)
	recs := make([]turnRecords, turns)
	leg := p.nextLeg()
	var wg sync.WaitGroup
	start := time.Now()
	runPool(&wg, concurrency, turns, func(i int) {
		if ctx.Err() != nil {
			recs[i] = turnRecords{Err: ctx.Err()}
			res.samples[i].err = ctx.Err()
			return
		}
		session := fmt.Sprintf("lt-%s-%s-%06d", p.runID, leg, i)
		var s turnSample
		var r turnRecords
		switch path {
		case pathRaw:
			s, r = p.rawTurn(ctx, session, frames)
		case pathCore:
			s, r = p.coreTurn(ctx, p.textRequest(session, frames, false))
		case pathClient:
			s, r = p.clientTurn(ctx, p.cl, p.textRequest(session, frames, false))
		}
		res.samples[i], recs[i] = s, r
	})
	wg.Wait()
	res.elapsed = time.Since(start)
	for _, r := range recs {
		res.delivery.add(r)
	}
	return res, ctx.Err()
}

// nextLeg names a leg uniquely within the run (sessions must be new).
func (p *profileRun) nextLeg() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.legs++
	return fmt.Sprintf("l%03d", p.legs)
}

// textRequest is a text turn of frames chunks in a session of its own.
func (p *profileRun) textRequest(session string, frames int, hold bool) wire.TurnRequest {
	return wire.TurnRequest{
		SessionID: session, TurnID: "t1",
		Input: []wire.InputMessage{{Role: wire.RoleUser, Content: textPrompt(frames, hold)}},
	}
}

// bareLeg has the bare client process run the leg.
func (p *profileRun) bareLeg(ctx context.Context, frames, turns, concurrency int) (legResult, error) {
	var res legResult
	b, _ := json.Marshal(bareCommand{Frames: frames, Turns: turns, Concurrency: concurrency}) // plain fields
	c := p.procs[roleBare]
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return res, fmt.Errorf("loadtest: bare client: %w (%v)", err, c.alive())
	}
	l, err := readLine(ctx, c.stdout)
	if err != nil {
		if aerr := c.alive(); aerr != nil {
			return res, aerr
		}
		return res, fmt.Errorf("loadtest: bare client: %w", err)
	}
	var br bareResult
	if err := json.Unmarshal(l, &br); err != nil {
		return res, fmt.Errorf("loadtest: bare client result: %w", err)
	}
	res.elapsed = time.Duration(br.ElapsedNS)
	res.short, res.firstErr = br.Short, br.FirstError
	for i := range br.TotalNS {
		res.samples = append(res.samples, turnSample{
			first: time.Duration(br.FirstChunkNS[i]), total: time.Duration(br.TotalNS[i]),
			gotFirst: br.FirstChunkNS[i] > 0,
		})
	}
	return res, nil
}

// liveTurn collects what a core subscriber receives of one turn.
type liveTurn struct {
	mu       sync.Mutex
	first    time.Time
	chunks   []chunkRecord
	events   []eventRecord
	turn     string
	terminal bool
	marked   bool // a chunk with an end marker came
	wake     chan struct{}
}

func newLiveTurn(turn string) *liveTurn {
	return &liveTurn{turn: turn, wake: make(chan struct{}, 1)}
}

func (l *liveTurn) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *liveTurn) onChunk(m *nats.Msg) {
	now := time.Now()
	var c wire.Chunk
	err := wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &c)
	l.mu.Lock()
	if l.first.IsZero() {
		l.first = now
	}
	if err == nil {
		l.chunks = append(l.chunks, chunkOf(&c))
		l.marked = l.marked || c.Marker != ""
	} // an undecodable chunk is missing from the records: the check says so
	l.mu.Unlock()
	l.signal()
}

func (l *liveTurn) onEvent(m *nats.Msg) {
	var ev wire.SessionEvent
	if wire.Decode(m.Header.Get(wire.HeaderContentType), m.Data, &ev) != nil {
		return
	}
	if ev.TurnID != l.turn {
		return
	}
	l.mu.Lock()
	l.events = append(l.events, eventOf(&ev))
	if ev.Terminal() {
		l.terminal = true
	}
	l.mu.Unlock()
	l.signal()
}

// complete reports whether every attempt received so far is ended by its
// marker with nothing missing before it, and (unless chunksOnly) the
// terminal event came.
func (l *liveTurn) complete(chunksOnly bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !chunksOnly && !l.terminal {
		return false
	}
	if len(l.chunks) == 0 {
		return false
	}
	type key struct{ step, attempt int }
	count := map[key]int{}
	marker := map[key]int{}
	for _, c := range l.chunks {
		k := key{c.Step, c.Attempt}
		count[k]++
		if c.Marker != "" {
			marker[k] = c.Seq
		}
	}
	for k, n := range count {
		if marker[k] != n {
			return false
		}
	}
	return true
}

func (l *liveTurn) records(name string) turnRecords {
	l.mu.Lock()
	defer l.mu.Unlock()
	return turnRecords{Name: name, Chunks: append([]chunkRecord(nil), l.chunks...), Events: append([]eventRecord(nil), l.events...)}
}

// await waits until the turn is complete (see complete), until
// followTimeout after its terminal event, or until ctx ends.
func (l *liveTurn) await(ctx context.Context, chunksOnly bool) error {
	var grace <-chan time.Time
	for !l.complete(chunksOnly) {
		l.mu.Lock()
		// Without events (the raw path) the marker is the end.
		terminal := l.terminal || (chunksOnly && l.marked)
		l.mu.Unlock()
		if terminal && grace == nil {
			t := time.NewTimer(followTimeout)
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-l.wake:
		case <-grace:
			return errors.New("the turn's last chunks did not come after its terminal event")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// coreTurn submits req with a JetStream publish, as pkg/client does, and
// follows it with core NATS subscriptions to its live chunks and its
// session's live events, made before the submit. The clock starts at the
// publish. A turn whose live records are incomplete (a republished record
// lost, which core NATS allows) is read again from the streams through
// pkg/client, and counted in liveGaps; the delivery check uses the stored
// records then.
func (p *profileRun) coreTurn(ctx context.Context, req wire.TurnRequest) (turnSample, turnRecords) {
	var s turnSample
	name := req.SessionID + "/" + req.TurnID
	tctx, cancel := context.WithTimeout(ctx, p.o.TurnTimeout)
	defer cancel()
	l := newLiveTurn(req.TurnID)
	csub, err := p.nc.Subscribe(p.subjects.LiveChunk(req.SessionID, req.TurnID), l.onChunk)
	if err != nil {
		s.err = err
		return s, turnRecords{Name: name, Err: err}
	}
	defer csub.Unsubscribe() //nolint:errcheck // best effort
	esub, err := p.nc.Subscribe(p.subjects.LiveEvent(req.SessionID), l.onEvent)
	if err != nil {
		s.err = err
		return s, turnRecords{Name: name, Err: err}
	}
	defer esub.Unsubscribe() //nolint:errcheck // best effort
	if err := p.nc.FlushWithContext(tctx); err != nil {
		s.err = err
		return s, turnRecords{Name: name, Err: err}
	}
	data, err := wire.JSON.Marshal(&req)
	if err != nil {
		s.err = err
		return s, turnRecords{Name: name, Err: err}
	}
	m := &nats.Msg{Subject: p.subjects.Submit(req.SessionID), Data: data, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}}
	start := time.Now()
	if _, err := p.js.PublishMsg(tctx, m, jetstream.WithMsgID(client.MsgID(req.SessionID, req.TurnID))); err != nil {
		s.err = err
		return s, turnRecords{Name: name, Err: err}
	}
	err = l.await(tctx, false)
	s.total = time.Since(start)
	l.mu.Lock()
	if !l.first.IsZero() {
		s.first, s.gotFirst = l.first.Sub(start), true
	}
	l.mu.Unlock()
	if err == nil {
		if live := l.records(name); len(checkTurn(live)) == 0 {
			return s, live
		}
		// Complete chunks but a live event lost (core NATS may drop one):
		// what the streams stored decides.
	}
	if ctx.Err() != nil {
		s.err = err
		return s, turnRecords{Name: name, Err: err}
	}
	// Read what the streams stored instead.
	p.liveGaps.Add(1)
	_, stored := p.followStored(ctx, req.SessionID, req.TurnID)
	return s, stored
}

// followStored reads a turn's stored records from the start, through
// pkg/client.
func (p *profileRun) followStored(ctx context.Context, session, turn string) (turnSample, turnRecords) {
	tctx, cancel := context.WithTimeout(ctx, p.o.TurnTimeout)
	defer cancel()
	t, err := p.cl.Follow(tctx, session, turn)
	if err != nil {
		return turnSample{err: err}, turnRecords{Name: session + "/" + turn, Err: err}
	}
	return followTurnWith(tctx, t, time.Now(), nil)
}

// clientTurn submits req through pkg/client and follows it to its end.
// The clock starts before Submit.
func (p *profileRun) clientTurn(ctx context.Context, cl *client.Client, req wire.TurnRequest) (turnSample, turnRecords) {
	tctx, cancel := context.WithTimeout(ctx, p.o.TurnTimeout)
	defer cancel()
	start := time.Now()
	t, err := cl.Submit(tctx, req)
	if err != nil {
		return turnSample{err: err, total: time.Since(start)}, turnRecords{Name: req.SessionID + "/" + req.TurnID, Err: err}
	}
	return followTurnWith(tctx, t, start, nil)
}

// followTurnWith reads t to its end, calling onFirst (if not nil) when
// the first chunk arrives.
func followTurnWith(ctx context.Context, t *client.Turn, start time.Time, onFirst func()) (s turnSample, r turnRecords) {
	defer t.Close()
	r.Name = t.Session() + "/" + t.ID()
	for {
		u, err := t.Next(ctx)
		if errors.Is(err, io.EOF) {
			s.total = time.Since(start)
			return s, r
		}
		if err != nil {
			s.total, s.err, r.Err = time.Since(start), err, err
			return s, r
		}
		switch {
		case u.Chunk != nil:
			if !s.gotFirst {
				s.first, s.gotFirst = time.Since(start), true
				if onFirst != nil {
					onFirst()
				}
			}
			r.Chunks = append(r.Chunks, chunkOf(u.Chunk))
		case u.Event != nil:
			r.Events = append(r.Events, eventOf(u.Event))
		}
	}
}

// rawTurn asks the raw-NATS pipeline for a text turn and follows its
// republished chunks with a core subscriber made before the request.
func (p *profileRun) rawTurn(ctx context.Context, id string, frames int) (turnSample, turnRecords) {
	var s turnSample
	r := turnRecords{Name: id, ChunksOnly: true}
	tctx, cancel := context.WithTimeout(ctx, p.o.TurnTimeout)
	defer cancel()
	l := newLiveTurn("t1")
	sub, err := p.nc.Subscribe(rawLivePrefix+id, l.onChunk)
	if err != nil {
		s.err, r.Err = err, err
		return s, r
	}
	defer sub.Unsubscribe() //nolint:errcheck // best effort
	if err := p.nc.FlushWithContext(tctx); err != nil {
		s.err, r.Err = err, err
		return s, r
	}
	b, _ := json.Marshal(rawSubmit{ID: id, Frames: frames}) // plain fields
	start := time.Now()
	if err := p.nc.Publish(rawSubmitSubject, b); err != nil {
		s.err, r.Err = err, err
		return s, r
	}
	err = l.await(tctx, true)
	s.total = time.Since(start)
	rec := l.records(id)
	r.Chunks = rec.Chunks
	l.mu.Lock()
	if !l.first.IsZero() {
		s.first, s.gotFirst = l.first.Sub(start), true
	}
	l.mu.Unlock()
	if err != nil {
		s.err, r.Err = err, err
	}
	return s, r
}

// measureRTT times n core NATS request/replies to the raw process's echo
// responder (requester and responder in separate processes, through the
// server: the round trip of a request to another process) and n PINGs
// (nats.Conn.RTT: to the server and back).
func (p *profileRun) measureRTT(ctx context.Context, n int) (reqReply, ping []time.Duration, err error) {
	payload := make([]byte, 64)
	for range n {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		t0 := time.Now()
		if _, err := p.nc.Request(rawEchoSubject, payload, 5*time.Second); err != nil {
			return nil, nil, fmt.Errorf("loadtest: round trip: %w", err)
		}
		reqReply = append(reqReply, time.Since(t0))
		d, err := p.nc.RTT()
		if err != nil {
			return nil, nil, fmt.Errorf("loadtest: round trip: %w", err)
		}
		ping = append(ping, d)
	}
	return reqReply, ping, nil
}

// sampleAll samples every running child.
func (p *profileRun) sampleAll() (map[string]procSample, error) {
	out := make(map[string]procSample, len(p.procs))
	for role, c := range p.procs {
		s, err := c.sample()
		if err != nil {
			return nil, err
		}
		out[role] = s
	}
	return out, nil
}

// cpuDelta is the CPU seconds each child used between two samples.
func cpuDelta(before, after map[string]procSample) map[string]float64 {
	out := make(map[string]float64, len(after))
	for role, a := range after {
		if b, ok := before[role]; ok {
			out[role] = (a.CPU - b.CPU).Seconds()
		}
	}
	return out
}

// readLine reads one line from r, or gives up when ctx ends.
func readLine(ctx context.Context, r *bufio.Reader) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := r.ReadBytes('\n')
		ch <- res{b, err}
	}()
	select {
	case x := <-ch:
		return x.b, x.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
