package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/pkg/wire"
)

// ErrShutdown is the cause a worker cancels running turns with when its
// drain timeout expires: the delivery is handed back to be resumed.
var ErrShutdown = errors.New("turn: worker shutting down")

// ErrFenced is what a Sessions implementation wraps when a write was
// refused because another delivery took the session's lease.
var ErrFenced = wire.ErrFenced

// Sessions is the durable side of a turn's delivery lifecycle (the worker
// adapts internal/bus to it).
type Sessions interface {
	// Look reads, at once, what deciding on a delivery needs: the records
	// of the session's turns and the session's head.
	Look(ctx context.Context, session string) (Look, error)
	// Take takes the session's lease for the request (turn, seq), starting
	// from what look read, fencing every earlier holder, and returns what
	// the holder may read and write. It fails wrapping ErrFenced when
	// another take overtook it. admitted (nil: always) is asked before the
	// take fences anyone: its error fails the take (ErrNotAdmitted).
	Take(ctx context.Context, look Look, turn string, seq uint64, codec wire.Codec, admitted func() error) (Held, error)
}

// Look is a session as read before its lease is taken.
type Look interface {
	// Record is the turn's record (RecordKey); ok is false if none.
	Record(turn string) (rec []byte, ok bool)
	// Head is the submit-stream sequence of the session's oldest request
	// still pending, 0 if none.
	Head() uint64
}

// Held is a session lease this delivery holds, with the session as it was
// stored when the lease was taken: nothing an earlier holder writes after
// that is stored.
type Held interface {
	// Deliveries counts the deliveries of the request that took the
	// lease, this one included.
	Deliveries() int
	// Record is the turn's record as stored when the lease was taken.
	Record() (rec []byte, ok bool)
	// Log is the session log and each message's store time.
	Log() ([]wire.Message, []time.Time)
	// Ran reports whether the log has messages of turn, and whether any
	// of them was appended by request seq (the one this delivery runs).
	Ran(turn string, seq uint64) (inLog, byRequest bool)
	// Tail is the turn's last stored chunk.
	Tail() Tail
	// Writer and State write under the lease: their writes fail wrapping
	// ErrFenced once it is lost.
	Writer() Writer
	State() StateStore
	// Held reports whether the lease is still this holder's.
	Held(ctx context.Context) (bool, error)
	// Release ends the holding once the turn ended.
	Release(ctx context.Context) error
}

// Delivery is one delivery of an admitted (decoded, valid) request.
type Delivery struct {
	Request *wire.TurnRequest
	Codec   wire.Codec
	// Seq is the request's submit-stream sequence: its identity.
	Seq uint64
	// Waits counts how often the delivery was handed back to wait for
	// its session's earlier turns (it spaces the next wait).
	Waits   int
	Schemas ToolSchemas
	Results ResultsOpener
	// LastResult, when set, positions a step's results follower by
	// sequence (ResultsFrom.After) rather than by time.
	LastResult LastResult
	// Look, when set, is the session as its caller read it already (while
	// it decoded the request); Deliver reads it itself otherwise.
	Look func() (Look, error)
	// Admitted, when set, reports whether the request is still this
	// delivery's to run (the worker's intake guard, released while the
	// lease is taken): an error leaves the request to the delivery that
	// owns it now. Take asks it before it fences any holder; it must
	// answer the same every time it is asked.
	Admitted func() error
	// Cancelled, when set, reports whether a cancel of the turn is stored
	// (a client asked for it while no delivery ran the turn). It is asked
	// once the lease is held, before anything of the turn runs: a
	// cancelled turn ends turn.failed "cancelled" and its provider is
	// never called. The worker reads it after it made the delivery
	// cancellable (a cancel that comes later cancels ctx, with
	// ErrCancelled), so a cancel is never missed between the two.
	Cancelled func(ctx context.Context) (bool, error)
}

// Settle is what the worker does with a delivery: its one ack decision.
type Settle uint8

const (
	// SettleAck: the turn ended (its terminal event is stored), or the
	// request is a resubmission of a turn id that ran.
	SettleAck Settle = iota + 1
	// SettleWait: an earlier turn of the session is pending; wait
	// (parked, without a slot) or hand the request back for
	// Verdict.Delay.
	SettleWait
	// SettleRetry: the store is in trouble; hand back after a pause.
	SettleRetry
	// SettleHandBack: shutting down; hand back now to be resumed.
	SettleHandBack
	// SettleTerm: never deliver again (the turn was ended as failed).
	SettleTerm
	// SettleLeave: another delivery owns the request (it took the lease,
	// or settled it): touch nothing, not even the delivery.
	SettleLeave
)

// Verdict is how a delivery ended.
type Verdict struct {
	Settle Settle
	// Delay is how long a SettleWait delivery waits.
	Delay time.Duration
	// What names the path taken, for logs: "completed", "failed",
	// "ended", "duplicate", "waiting", "fenced", "interrupted", ...
	What string
	// Reason is the turn's failure reason, if it failed.
	Reason string
	// Duplicate is set when the request resubmits a turn id another
	// request owns: the worker reports it (wire.EventTurnDuplicate)
	// before it acks.
	Duplicate *Duplicate
	Err       error
	// release ends the lease holding, after the worker settled the
	// delivery (Finish).
	release func(context.Context)
}

// Duplicate is a request that resubmits a turn id: the turn it duplicates
// runs (or ran) once, from its first request.
type Duplicate struct {
	// Of is the submit-stream sequence of the request that owns the turn
	// id, 0 if unknown (the turn is older than turn records, or its record
	// expired).
	Of uint64
}

// duplicate is the verdict on a resubmission of the turn of rec (nil: only
// the session log shows the turn ran).
func duplicate(rec *Record, release func(context.Context)) Verdict {
	d := &Duplicate{}
	if rec != nil {
		d.Of = rec.Seq
	}
	return Verdict{Settle: SettleAck, What: "duplicate", Duplicate: d, release: release}
}

// Finish ends what the delivery still holds: once the request is acked
// (or terminated), the lease is released, so a turn of the session waiting
// for it finds itself first when the release wakes it. A worker that dies
// before Finish leaves the lease to the next take, which needs no release.
func (v Verdict) Finish(ctx context.Context) {
	if v.release != nil {
		v.release(ctx)
	}
}

// Lifecycle runs deliveries of turn requests: one home for deciding what a
// delivery is, taking the session's lease, running the loop and ending the
// turn. Its fields are set once; Deliver may be called concurrently.
type Lifecycle struct {
	Loop     *Loop
	Sessions Sessions
	// MaxDeliveries is how many deliveries of a request may take the lease
	// and die before the turn is failed ("deliveries_exhausted"): the
	// worker's worker.max_deliver (default config.DefaultMaxDeliver).
	// Required: the server caps no deliveries.
	MaxDeliveries int
	Log           zerolog.Logger
}

// Failure reasons the lifecycle ends turns with.
const (
	// ReasonExhausted: every delivery of the turn died without ending it.
	ReasonExhausted = string(wire.FailDeliveriesExhausted)
	// ReasonInternal: running the turn panicked.
	ReasonInternal = string(wire.FailInternal)
	// ReasonTooLarge: a record of the turn exceeds the server's max payload.
	ReasonTooLarge = string(wire.FailRecordTooLarge)
)

// deliveryKind is what a delivery is, decided from the turn's record.
type deliveryKind uint8

const (
	kindNew       deliveryKind = iota + 1 // no record: the turn's first delivery
	kindResumed                           // its record, not ended: resume it
	kindEnded                             // its record, ended: never run again
	kindDuplicate                         // another request's record: a resubmission
)

// identify decides what the delivery of request seq is.
func identify(rec *Record, seq uint64) deliveryKind {
	switch {
	case rec == nil:
		return kindNew
	case rec.Seq != seq:
		return kindDuplicate
	case rec.End != nil:
		return kindEnded
	}
	return kindResumed
}

// Deliver runs one delivery to its verdict.
func (lc *Lifecycle) Deliver(ctx context.Context, d Delivery) Verdict {
	req := d.Request
	// A delivery cancelled by request still reads its session and takes
	// the lease: it ends the turn under it.
	hctx, stop := holding(ctx)
	defer stop()
	read := d.Look
	if read == nil {
		read = func() (Look, error) { return lc.Sessions.Look(hctx, req.SessionID) }
	}
	look, err := read()
	if err != nil {
		return Verdict{Settle: SettleRetry, What: "unreadable_session", Err: err}
	}
	rec, err := parseRecord(req, func() ([]byte, bool) { return look.Record(req.TurnID) })
	if err != nil {
		return Verdict{Settle: SettleRetry, What: "unreadable_record", Err: err}
	}
	k := identify(rec, d.Seq)
	if k == kindDuplicate {
		// The same turn id runs once: its first request owns it.
		return duplicate(rec, nil)
	}
	if k != kindEnded {
		if v, ok := lc.order(look.Head(), d); !ok {
			return v
		}
	}
	held, err := lc.Sessions.Take(hctx, look, req.TurnID, d.Seq, d.Codec, d.admitted())
	if err != nil {
		if errors.Is(err, ErrNotAdmitted) {
			return Verdict{Settle: SettleLeave, What: "judged_elsewhere", Err: err}
		}
		if errors.Is(err, ErrFenced) {
			return Verdict{Settle: SettleLeave, What: "fenced", Err: err}
		}
		return Verdict{Settle: SettleRetry, What: "lease_unavailable", Err: err}
	}
	lc.Loop.probe(ProbeLeased)
	// Decide again from what is stored now that no earlier delivery can
	// write: one paused before the take may have ended the turn meanwhile.
	if rec, err = parseRecord(req, held.Record); err != nil {
		return Verdict{Settle: SettleRetry, What: "unreadable_record", Err: err}
	}
	switch k = identify(rec, d.Seq); {
	case k == kindDuplicate:
		return duplicate(rec, lc.releaser(held))
	case k == kindEnded:
		return lc.ended(ctx, d, held, rec.End)
	case k == kindNew:
		// The log has the turn and no record names a request for it: a
		// turn from before turn records (or whose record expired) — the
		// same turn id runs once — unless this request appended them (its
		// record and its input go out together: a delivery may have
		// stopped with the input stored and not the record).
		if inLog, ours := held.Ran(req.TurnID, d.Seq); inLog && !ours {
			return duplicate(nil, lc.releaser(held))
		}
	}
	switch cancelled, err := d.cancelled(hctx, ctx); {
	case err != nil:
		return Verdict{Settle: SettleRetry, What: "unreadable_cancel", Err: err}
	case cancelled:
		return lc.cancelled(ctx, d, held)
	}
	if held.Deliveries() > lc.MaxDeliveries {
		// Every delivery so far died without ending the turn: end it, so
		// it neither loops forever nor blocks its session.
		return lc.abort(ctx, d, held, ReasonExhausted)
	}
	if k == kindNew {
		if err := lc.accept(ctx, d, held); err != nil {
			return lc.interrupted(ctx, d, held, err)
		}
	}
	out, panicked := lc.run(ctx, d, held)
	switch {
	case panicked:
		// A bug, or input that reached one: running it again would panic
		// again. The turn fails, and its session's next turn runs.
		return lc.abort(ctx, d, held, ReasonInternal)
	case out.Err == nil:
		return Verdict{Settle: SettleAck, What: out.Status, Reason: out.Reason, release: lc.releaser(held)}
	}
	return lc.interrupted(ctx, d, held, out.Err)
}

// ErrNotAdmitted wraps Delivery.Admitted's error: another delivery owns the
// request.
var ErrNotAdmitted = errors.New("turn: the request is another delivery's")

// admitted is d.Admitted with its error wrapping ErrNotAdmitted.
func (d Delivery) admitted() func() error {
	if d.Admitted == nil {
		return nil
	}
	return func() error {
		if err := d.Admitted(); err != nil {
			return fmt.Errorf("%w: %w", ErrNotAdmitted, err)
		}
		return nil
	}
}

// holding is ctx for what a delivery does before it runs the turn (read
// the session, take the lease): it ends with ctx, unless a cancel by
// request (ErrCancelled) ended ctx, which the delivery honors once it
// holds the lease.
func holding(ctx context.Context) (context.Context, context.CancelFunc) {
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !errors.Is(cause, ErrCancelled) {
			cancel(cause)
		}
	})
	return hctx, func() { stop(); cancel(nil) }
}

// cancelled reports whether the turn is to end cancelled before it runs:
// ctx was cancelled by request, or a cancel of the turn is stored.
func (d Delivery) cancelled(hctx, ctx context.Context) (bool, error) {
	if errors.Is(context.Cause(ctx), ErrCancelled) {
		return true, nil
	}
	if d.Cancelled == nil {
		return false, nil
	}
	ok, err := d.Cancelled(hctx)
	if errors.Is(context.Cause(ctx), ErrCancelled) {
		return true, nil // cancelled while the store was read
	}
	return ok, err
}

// cancelled ends a turn cancelled before this delivery ran it (queued
// behind its session's earlier turn, or between deliveries): turn.failed
// "cancelled", as a turn cancelled while it runs, with every call a
// resumed turn left open given an explicit result. Nothing is sent to the
// provider. The request is acked, as for a turn that ended.
func (lc *Lifecycle) cancelled(ctx context.Context, d Delivery, held Held) Verdict {
	v := lc.abort(ctx, d, held, ReasonCancelled)
	if v.Settle == SettleTerm {
		v.Settle = SettleAck
	}
	return v
}

// parseRecord decodes the turn's record as read (nil if it has none).
func parseRecord(req *wire.TurnRequest, read func() ([]byte, bool)) (*Record, error) {
	b, ok := read()
	if !ok {
		return nil, nil
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("turn: record of %s/%s: %w", req.SessionID, req.TurnID, err)
	}
	return &rec, nil
}

// ended handles a delivery of a turn that ended: the delivery that recorded
// the end may have died before its terminal event was stored or its lease
// released, so both are done again under the lease (the event is
// deduplicated by its message id), and the request is acked.
func (lc *Lifecycle) ended(ctx context.Context, d Delivery, held Held, end *EndRecord) Verdict {
	req := d.Request
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	ev := wire.SessionEvent{Type: end.Type, SessionID: req.SessionID, TurnID: req.TurnID, Time: lc.Loop.now(), Payload: end.Payload}
	if p, err := ev.Decode(); err == nil {
		// Typed again, the payload's numbers are the integers first
		// published, not the floats its record reads back as.
		ev = wire.NewEvent(ev.SessionID, ev.TurnID, 0, 0, ev.Time, p)
	}
	if err := held.Writer().Terminal(wctx, &ev); err != nil {
		if errors.Is(err, ErrFenced) {
			return Verdict{Settle: SettleLeave, What: "fenced", Err: err}
		}
		return Verdict{Settle: SettleRetry, What: "terminal_not_stored", Err: err}
	}
	return Verdict{Settle: SettleAck, What: "ended", release: lc.releaser(held)}
}

// order keeps a session's turns in submission order, never overlapping: a
// request runs only when it is the session's oldest pending one. An
// earlier one pending makes it wait, handed back without holding anything.
func (lc *Lifecycle) order(head uint64, d Delivery) (Verdict, bool) {
	switch {
	case head == d.Seq:
		return Verdict{}, true
	case head == 0 || head > d.Seq:
		// No longer pending: another delivery settled it.
		return Verdict{Settle: SettleLeave, What: "settled_elsewhere"}, false
	}
	return Verdict{Settle: SettleWait, Delay: WaitDelay(d.Waits), What: "waiting"}, false
}

// WaitDelay is how long a request waits for its session's earlier turn
// before it is delivered again: 100ms, doubling with each wait, at most 2s.
func WaitDelay(waits int) time.Duration {
	return min(100*time.Millisecond<<min(max(waits, 0), 5), 2*time.Second)
}

// accept writes the turn's record: from now on, every delivery of this
// request resumes the turn and any other request with its id is a
// resubmission.
func (lc *Lifecycle) accept(ctx context.Context, d Delivery, held Held) error {
	b, _ := json.Marshal(Record{V: 1, Seq: d.Seq}) // plain fields: cannot fail
	key := RecordKey(d.Request.SessionID, d.Request.TurnID)
	if ps, ok := held.State().(pipelinedState); ok {
		// Awaited with the turn's input messages, before the provider is
		// called: a delivery that stops before it is stored finds the
		// lease named its request (Held.Deliveries), and runs the turn.
		ps.PutAsync(ctx, key, b)
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := held.State().Put(wctx, key, b); err != nil {
		return fmt.Errorf("turn: accept: %w", err)
	}
	return nil
}

// input is the loop's input for a held delivery.
func (d Delivery) input(held Held) Input {
	log, stored := held.Log()
	return Input{
		Request: d.Request, Seq: d.Seq, Log: log, Stored: stored,
		Delivery: held.Deliveries(), Writer: held.Writer(), State: held.State(),
		OpenResults: d.Results, LastResult: d.LastResult, Tail: held.Tail(), Schemas: d.Schemas,
	}
}

// run runs the loop; a panic anywhere in it is reported, not fatal.
func (lc *Lifecycle) run(ctx context.Context, d Delivery, held Held) (out Outcome, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			lc.Log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).Msg("the turn panicked; failing it")
			panicked = true
		}
	}()
	return lc.Loop.Run(ctx, d.input(held)), false
}

// interrupted decides what becomes of a delivery the loop (or its accept)
// could not finish.
func (lc *Lifecycle) interrupted(ctx context.Context, d Delivery, held Held, err error) Verdict {
	switch {
	case errors.Is(err, ErrFenced):
		// Refused: another delivery took the lease, and this one stops
		// and leaves the request to it. A fence can also move without a
		// take (a stream's max age dropped this holder's marker): then
		// the lease is still this one's, and a redelivery takes it anew.
		if still, herr := held.Held(ctx); herr == nil && still {
			return Verdict{Settle: SettleRetry, What: "fence_lost", Err: err}
		}
		return Verdict{Settle: SettleLeave, What: "fenced", Err: err}
	case errors.Is(err, wire.ErrRecordTooLarge):
		// The same record would not fit on any redelivery either.
		return lc.abort(ctx, d, held, ReasonTooLarge)
	case errors.Is(context.Cause(ctx), ErrShutdown):
		return Verdict{Settle: SettleHandBack, What: "shutdown", Err: err}
	case held.Deliveries() >= lc.MaxDeliveries:
		return lc.abort(ctx, d, held, ReasonExhausted)
	}
	return Verdict{Settle: SettleRetry, What: "interrupted", Err: err}
}

// abort ends the turn as failed with reason, under the lease.
func (lc *Lifecycle) abort(ctx context.Context, d Delivery, held Held, reason string) Verdict {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	out := lc.Loop.Abort(wctx, d.input(held), reason)
	if out.Err != nil {
		if errors.Is(out.Err, ErrFenced) {
			return Verdict{Settle: SettleLeave, What: "fenced", Err: out.Err}
		}
		// Terminated without its terminal event stored, the turn would
		// never end for its followers: hand it back; the next delivery
		// finds it ended (and republishes the event) or aborts again.
		return Verdict{Settle: SettleRetry, What: "abort_not_stored", Reason: reason, Err: out.Err}
	}
	return Verdict{Settle: SettleTerm, What: wire.EventTurnFailed, Reason: reason, Err: out.Err, release: lc.releaser(held)}
}

// releaser ends the holding. A lease left unreleased costs nothing but a
// later take's extra read, so a failure is only logged.
func (lc *Lifecycle) releaser(held Held) func(context.Context) {
	return func(ctx context.Context) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		if err := held.Release(wctx); err != nil {
			lc.Log.Warn().Err(err).Msg("lease not released")
		}
	}
}

// writeTimeout bounds a write that must not be cut short by the turn's
// own context. It is as long as an ack may take under load (the bus's
// StallWait, and the worker's default ack wait): a write that gives up
// sooner fails its delivery, and the turn is run again, which a burst of
// thousands of turns ending at once would otherwise do to many of them.
const writeTimeout = 30 * time.Second
