package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The slow-turn legs put InFlight turns in flight at once in a fresh
// worker with room for all of them: each answer is held by the mock after
// its first chunk until every turn is held (or the ramp times out), then
// released. Two legs, each with its own turns:
//
//   - memory: the turns are submitted with bare JetStream publishes and
//     watched by one core subscriber of every live chunk and event; the
//     worker's RSS is sampled idle and with every turn held. Nothing but
//     the worker and the server does per-turn work.
//   - followers: the turns are submitted and followed through pkg/client,
//     one Turn each, followersPerConn to a connection: the follower count.
//
// After each leg, every turn whose records came incomplete (a live record
// lost, a follower that failed) is read again from the streams through
// pkg/client, so that the delivery check counts what turnstream stored,
// and the follower count what the followers got.

// followersPerConn is how many followers of the follower leg share a NATS
// connection.
const followersPerConn = 100

// verifyConcurrency and verifyTimeout bound the re-reading of incomplete
// turns after a leg.
const (
	verifyConcurrency = 8
	verifyTimeout     = 5 * time.Minute
	verifyTurnTimeout = 30 * time.Second
)

// slowLegs runs both slow-turn legs in a fresh worker.
func (p *profileRun) slowLegs(ctx context.Context) (*MemoryResult, error) {
	n := p.o.InFlight
	m := &MemoryResult{InFlight: n}
	if w := p.procs[roleWorker]; w != nil {
		w.stop()
		delete(p.procs, roleWorker)
	}
	// The worker's wall clock and provider idle timeout: the ramp, the
	// hold, and the drain.
	concurrency := n
	for _, f := range p.o.FollowerSteps {
		concurrency = max(concurrency, f)
	}
	if err := p.startWorker(ctx, concurrency, p.slowBound()); err != nil {
		return m, err
	}
	w := p.procs[roleWorker]
	// A few turns, so that the worker has run some before it is measured
	// idle.
	res, err := p.runLeg(ctx, pathClient, 16, 16, 8)
	if err != nil {
		return m, err
	}
	m.Delivery.merge(res.delivery)
	time.Sleep(2 * time.Second)
	idle, err := w.sample()
	if err != nil {
		return m, err
	}
	m.WorkerIdleRSS = idle.RSS

	p.o.Log.Info().Int("in_flight", n).Msg("slow turns: memory")
	if err := p.memoryLeg(ctx, m); err != nil {
		return m, err
	}
	for _, f := range p.o.FollowerSteps {
		p.o.Log.Info().Int("followers", f).Msg("slow turns: followers")
		fr, err := p.followerLeg(ctx, f)
		if fr != nil {
			m.Followers = append(m.Followers, fr)
			m.Delivery.merge(fr.Delivery)
		}
		if err != nil {
			return m, err
		}
		if fr.Completed < fr.Followers {
			break // the ceiling is below the next step
		}
	}
	end, err := w.sample()
	if err != nil {
		return m, err
	}
	m.WorkerPeakRSS = end.HWM
	return m, nil
}

// slowBound bounds a slow-turn leg: its ramp, hold and drain.
func (p *profileRun) slowBound() time.Duration {
	return p.o.RampTimeout + p.o.DrainTimeout + time.Minute
}

// memoryLeg measures the worker's RSS with InFlight turns in flight and
// checks their delivery.
func (p *profileRun) memoryLeg(ctx context.Context, m *MemoryResult) error {
	n := m.InFlight
	w := p.procs[roleWorker]
	leg := p.nextLeg()
	prefix := fmt.Sprintf("lt-%s-%s-", p.runID, leg)
	names := make([]string, n)
	live := make(map[string]*liveTurn, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s%06d", prefix, i)
		live[names[i]] = newLiveTurn("t1")
	}
	route := func(on func(*liveTurn, *nats.Msg), subj func(*nats.Msg) string) nats.MsgHandler {
		return func(msg *nats.Msg) {
			if lt := live[p.subjects.SessionOf(subj(msg))]; lt != nil {
				on(lt, msg)
			}
		}
	}
	stored := func(msg *nats.Msg) string { return msg.Header.Get(jetstream.SubjectHeader) }
	subs := []*nats.Subscription{}
	defer func() {
		for _, s := range subs {
			s.Unsubscribe() //nolint:errcheck // best effort
		}
	}()
	for _, s := range []struct {
		subject string
		on      func(*liveTurn, *nats.Msg)
	}{
		{p.subjects.LiveChunk("*", "*"), (*liveTurn).onChunk},
		{p.subjects.LiveEvent("*"), (*liveTurn).onEvent},
	} {
		sub, err := p.nc.Subscribe(s.subject, route(s.on, stored))
		if err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
		// Every record is kept: the subscriber must not be the one that
		// drops them.
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
		subs = append(subs, sub)
	}
	if err := p.nc.Flush(); err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	if err := p.mockControl(ctx, mockArmPath); err != nil {
		return err
	}
	srvIdle, err := p.procs[roleNATS].sample()
	if err != nil {
		return err
	}
	m.ServerIdleRSS = srvIdle.RSS
	lctx, cancel := context.WithTimeout(ctx, p.slowBound())
	defer cancel()
	start := time.Now()
	var submitters sync.WaitGroup
	var submitErrs atomic.Int64
	runPool(&submitters, 64, n, func(i int) {
		req := p.textRequest(names[i], 16, true)
		data, err := wire.JSON.Marshal(&req)
		if err == nil {
			msg := &nats.Msg{Subject: p.subjects.Submit(req.SessionID), Data: data, Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}}
			_, err = p.js.PublishMsg(lctx, msg, jetstream.WithMsgID(client.MsgID(req.SessionID, req.TurnID)))
		}
		if err != nil {
			submitErrs.Add(1)
		}
	})
	held, timedOut, err := p.awaitHeld(ctx, n, func() bool { return false })
	if err != nil {
		return err
	}
	m.Held, m.RampTimedOut = held, timedOut
	m.RampSeconds = time.Since(start).Seconds()
	at, err := w.sample()
	if err != nil {
		return err
	}
	srvAt, err := p.procs[roleNATS].sample()
	if err != nil {
		return err
	}
	m.WorkerRSS, m.ServerRSS = at.RSS, srvAt.RSS
	if m.Held > 0 {
		m.PerTurnBytes = float64(m.WorkerRSS-m.WorkerIdleRSS) / float64(m.Held)
	}
	if err := p.mockControl(ctx, mockReleasePath); err != nil {
		return err
	}
	released := time.Now()
	submitters.Wait()
	// Wait for every turn's end, within the drain.
	drain, cancelDrain := context.WithTimeout(lctx, p.o.DrainTimeout)
	defer cancelDrain()
	stop := p.progress(drain, n, func() int64 {
		done := int64(0)
		for _, lt := range live {
			if lt.complete(false) {
				done++
			}
		}
		return done
	}, nil)
	var waiting sync.WaitGroup
	for _, name := range names {
		lt := live[name]
		waiting.Go(func() { lt.await(drain, false) }) //nolint:errcheck // incomplete turns are read again below
	}
	waiting.Wait()
	stop()
	m.DrainSeconds = time.Since(released).Seconds()
	recs := make([]turnRecords, n)
	var again []int
	for i, name := range names {
		if live[name].complete(false) {
			recs[i] = live[name].records(name + "/t1")
			if len(checkTurn(recs[i])) == 0 {
				continue
			}
		}
		again = append(again, i)
	}
	m.LiveIncomplete = len(again)
	p.reread(ctx, names, again, recs)
	var d DeliveryCheck
	for _, r := range recs {
		d.add(r)
	}
	if se := submitErrs.Load(); se > 0 {
		d.Problems = append(d.Problems, fmt.Sprintf("%d submits failed", se))
	}
	m.HeldDelivery = d
	m.Delivery.merge(d)
	if !d.Exact() {
		p.o.Log.Warn().Str("worker_stderr", w.stderr.last(10)).Msg("the held turns were not all delivered")
	}
	return nil
}

// The follower leg's guards: it gives up when the followers' process or
// the server grows past followerRSSGuard, or when no follower ended for
// followerStallGuard after the release.
const (
	followerRSSGuard   = 6 << 30
	followerStallGuard = 3 * time.Minute
)

// followerLeg puts n turns in flight, each submitted and followed through
// pkg/client, and counts the followers that got their turn complete.
func (p *profileRun) followerLeg(ctx context.Context, n int) (*FollowerResult, error) {
	f := &FollowerResult{Followers: n, PerConnection: followersPerConn}
	conns := make([]*client.Client, 0, (n+followersPerConn-1)/followersPerConn)
	var ncs []*nats.Conn
	defer func() {
		for _, nc := range ncs {
			nc.Close()
		}
	}()
	for range cap(conns) {
		nc, err := nats.Connect(p.natsURL, nats.Name("turnstream loadtest followers"), nats.MaxReconnects(-1))
		if err != nil {
			return f, fmt.Errorf("loadtest: connect: %w", err)
		}
		ncs = append(ncs, nc)
		cl, err := client.New(nc)
		if err != nil {
			return f, err
		}
		conns = append(conns, cl)
	}
	if err := p.mockControl(ctx, mockArmPath); err != nil {
		return f, err
	}
	leg := p.nextLeg()
	names := make([]string, n)
	recs := make([]turnRecords, n)
	var active, ended atomic.Int64
	var followers, submitters sync.WaitGroup
	lctx, cancel := context.WithTimeout(ctx, p.slowBound())
	defer cancel()
	start := time.Now()
	runPool(&submitters, 64, n, func(i int) {
		names[i] = fmt.Sprintf("lt-%s-%s-%06d", p.runID, leg, i)
		t, err := conns[i%len(conns)].Submit(lctx, p.textRequest(names[i], 16, true))
		if err != nil {
			recs[i] = turnRecords{Name: names[i] + "/t1", Err: err}
			ended.Add(1)
			return
		}
		active.Add(1)
		followers.Go(func() {
			defer ended.Add(1)
			defer active.Add(-1)
			_, recs[i] = followTurnWith(lctx, t, time.Now(), nil)
		})
	})
	_, _, err := p.awaitHeld(ctx, n, func() bool { return ended.Load() >= int64(n) })
	if err != nil {
		return f, err
	}
	f.RampSeconds = time.Since(start).Seconds()
	f.AtOnce = int(active.Load())
	if self, err := readProc(os.Getpid()); err == nil {
		f.FollowerProcessRSS = self.RSS
	}
	if err := p.mockControl(ctx, mockReleasePath); err != nil {
		return f, err
	}
	released := time.Now()
	stopGuard := p.guardFollowers(lctx, cancel, f, ended.Load)
	submitters.Wait()
	stop := p.progress(lctx, n, ended.Load, ncs)
	followers.Wait()
	stop()
	stopGuard()
	if self, err := readProc(os.Getpid()); err == nil {
		f.FollowerProcessPeakRSS = max(f.FollowerProcessPeakRSS, self.RSS)
	}
	if srv, err := p.procs[roleNATS].sample(); err == nil {
		f.ServerPeakRSS = max(f.ServerPeakRSS, srv.RSS)
	}
	f.DrainSeconds = time.Since(released).Seconds()
	for _, nc := range ncs {
		f.Reconnects += int(nc.Stats().Reconnects)
	}
	var again []int
	for i, r := range recs {
		if r.Err == nil && len(checkTurn(r)) == 0 {
			f.Completed++
			continue
		}
		if f.FirstError == "" {
			f.FirstError = firstProblem(r)
		}
		again = append(again, i)
	}
	// What the failed followers' turns stored: the delivery check.
	p.reread(ctx, names, again, recs)
	var d DeliveryCheck
	for _, r := range recs {
		d.add(r)
	}
	f.Delivery = d
	return f, nil
}

// guardFollowers cancels a follower leg (cancel) that passes a guard, and
// says why in f.Aborted. It checks every 5 seconds until stopped.
func (p *profileRun) guardFollowers(ctx context.Context, cancel context.CancelFunc, f *FollowerResult, ended func() int64) (stop func()) {
	ctx, stopCtx := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		last, lastAt := ended(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			why := ""
			self, err1 := readProc(os.Getpid())
			srv, err2 := p.procs[roleNATS].sample()
			switch e := ended(); {
			case err1 == nil && self.RSS > followerRSSGuard:
				why = fmt.Sprintf("the followers' process passed %d GiB of RSS", followerRSSGuard>>30)
			case err2 == nil && srv.RSS > followerRSSGuard:
				why = fmt.Sprintf("nats-server passed %d GiB of RSS", followerRSSGuard>>30)
			case e != last:
				last, lastAt = e, time.Now()
			case time.Since(lastAt) > followerStallGuard:
				why = fmt.Sprintf("no follower ended for %s", followerStallGuard)
			}
			if err1 == nil {
				f.FollowerProcessPeakRSS = max(f.FollowerProcessPeakRSS, self.RSS)
			}
			if err2 == nil {
				f.ServerPeakRSS = max(f.ServerPeakRSS, srv.RSS)
			}
			if why != "" {
				f.Aborted = why
				p.o.Log.Warn().Str("why", why).Msg("follower leg aborted")
				cancel()
				return
			}
		}
	}()
	return func() { stopCtx(); <-done }
}

// firstProblem describes what went wrong with a turn's follower.
func firstProblem(r turnRecords) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	if ps := checkTurn(r); len(ps) > 0 {
		return ps[0].detail
	}
	return ""
}

// awaitHeld waits until n answers are held by the mock (n turns in flight
// in the worker), the ramp times out, or done reports true; then a second
// more, for the last turns' first records to settle.
func (p *profileRun) awaitHeld(ctx context.Context, n int, done func() bool) (held int, timedOut bool, err error) {
	ramp := time.NewTimer(p.o.RampTimeout)
	defer ramp.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		h, err := p.mockHeld(ctx)
		if err != nil {
			return 0, false, err
		}
		if h >= int64(n) || done() {
			break
		}
		select {
		case <-tick.C:
			continue
		case <-ramp.C:
			timedOut = true
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
		break
	}
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	h, err := p.mockHeld(ctx)
	return int(h), timedOut, err
}

// reread reads the turns at indexes again from the streams (pkg/client
// Follow from the start of each turn), replacing their records.
func (p *profileRun) reread(ctx context.Context, names []string, indexes []int, recs []turnRecords) {
	if len(indexes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	var wg sync.WaitGroup
	runPool(&wg, verifyConcurrency, len(indexes), func(j int) {
		i := indexes[j]
		if names[i] == "" {
			return // never submitted
		}
		tctx, cancel := context.WithTimeout(ctx, verifyTurnTimeout)
		defer cancel()
		t, err := p.cl.Follow(tctx, names[i], "t1")
		if err != nil {
			recs[i] = turnRecords{Name: names[i] + "/t1", Err: fmt.Errorf("read again: %w", err)}
			return
		}
		_, r := followTurnWith(tctx, t, time.Now(), nil)
		if r.Err != nil {
			r.Err = fmt.Errorf("read again: %w", r.Err)
		}
		recs[i] = r
	})
	wg.Wait()
}

// progress logs, every 10 seconds until stopped, how many of the n turns
// are done, what the streams stored and the connections' reconnects.
func (p *profileRun) progress(ctx context.Context, n int, done func() int64, ncs []*nats.Conn) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ev := p.o.Log.Info().Int64("done", done()).Int("of", n)
			for _, name := range []string{wire.StreamChunks, wire.StreamEvents} {
				ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
				if s, err := p.js.Stream(ictx, name); err == nil {
					ev = ev.Uint64(strings.ToLower(name), s.CachedInfo().State.Msgs)
				}
				icancel()
			}
			reconnects := uint64(0)
			for _, nc := range ncs {
				reconnects += nc.Stats().Reconnects
			}
			ev.Uint64("reconnects", reconnects).Msg("draining")
		}
	}()
	return func() { cancel(); <-finished }
}
