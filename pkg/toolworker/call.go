package toolworker

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// opTimeout bounds the result publish and the ack.
	opTimeout = 5 * time.Second
	// publishRetryDelay delays the redelivery of a call whose result could
	// not be published.
	publishRetryDelay = time.Second
	// headerRoom is kept free of the server's max payload for headers.
	headerRoom = 512
)

// Term reasons, coarse and content-free.
const (
	termMalformed    = "malformed"
	termInvalid      = "invalid_tool_call"
	termNameMismatch = "tool_name_mismatch"
	termExpired      = "deadline_passed"
)

// message is the part of jetstream.Msg a call needs.
type message interface {
	Data() []byte
	Headers() nats.Header
	Subject() string
	Metadata() (*jetstream.MsgMetadata, error)
	InProgress() error
	DoubleAck(context.Context) error
	Nak() error
	NakWithDelay(time.Duration) error
	TermWithReason(string) error
}

// handle decides the fate of one delivered call: terminate it, run it and
// answer it, or hand it back. Every path settles the message exactly once.
func (t *tool) handle(runCtx context.Context, m message, heartbeat time.Duration) {
	log := t.log
	if meta, err := m.Metadata(); err == nil {
		log = log.With().Uint64("stream_seq", meta.Sequence.Stream).Uint64("delivered", meta.NumDelivered).Logger()
	}

	var call wire.ToolCall
	if err := wire.Decode(m.Headers().Get(wire.HeaderContentType), m.Data(), &call); err != nil {
		t.term(log, m, termMalformed, err)
		return
	}
	if err := call.Validate(); err != nil {
		t.term(log, m, termInvalid, err)
		return
	}
	if subjectTool := strings.TrimPrefix(m.Subject(), t.subjects.Tool("")); call.Name != subjectTool {
		t.term(log, m, termNameMismatch, nil)
		return
	}
	res := wire.ToolResult{SessionID: call.SessionID, TurnID: call.TurnID, CallID: call.CallID}
	if err := res.Validate(); err != nil {
		t.term(log, m, termInvalid, err) // a call id no result could carry
		return
	}
	log = log.With().
		Str("session_id", call.SessionID).Str("turn_id", call.TurnID).
		Int("step", call.Step).Str("call_id", call.CallID).Logger()
	if !time.Now().Before(call.Deadline) {
		t.term(log, m, termExpired, nil)
		return
	}
	codec, err := wire.CodecFor(m.Headers().Get(wire.HeaderContentType))
	if err != nil { // unreachable: Decode accepted the same header
		t.term(log, m, termMalformed, err)
		return
	}

	ctx, cancel := context.WithDeadline(runCtx, call.Deadline)
	defer cancel()
	start := time.Now()
	out := t.run(log.WithContext(ctx), m, call, heartbeat, log)
	log = log.With().Dur("run_ms", time.Since(start)).Logger()

	if runCtx.Err() != nil {
		// The drain timeout cut the run short and its outcome may be
		// partial: hand the call back to be run again.
		log.Warn().Msg("call cancelled by shutdown; handing it back")
		if err := m.Nak(); err != nil {
			log.Error().Err(err).Msg("handing back a call failed")
		}
		return
	}
	if !time.Now().Before(call.Deadline) {
		// The turn worker has written a timeout result; a late one would
		// contradict it.
		t.term(log, m, termExpired, nil)
		return
	}
	res.Content, res.IsError = out.Content, out.IsError
	t.reply(runCtx, log, m, codec, res)
}

// run invokes the handler while telling the server, every heartbeat, that
// the call is still being worked on.
func (t *tool) run(ctx context.Context, m message, call wire.ToolCall, heartbeat time.Duration, log zerolog.Logger) Result {
	done := make(chan struct{})
	var beats sync.WaitGroup
	beats.Go(func() {
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := m.InProgress(); err != nil {
					log.Warn().Err(err).Msg("in-progress ack failed")
				}
			}
		}
	})
	defer beats.Wait()
	defer close(done)
	return invoke(ctx, t.handler, call)
}

// reply publishes res, deduplicated by the call's identity, then acks the
// call. A result the server would refuse is cut to fit, with a marker that
// tells the model how much there was (wire.FitContent), never replaced. A
// failed publish hands the call back after publishRetryDelay.
func (t *tool) reply(ctx context.Context, log zerolog.Logger, m message, codec wire.Codec, res wire.ToolResult) {
	out, err := t.encode(codec, res)
	if limit := int(t.js.Conn().MaxPayload()) - headerRoom; err == nil && len(out.Data) > limit {
		returned := len(res.Content)
		res.Content, res.ContentBytes, res.ContentTruncated, err = wire.FitContent(res.Content, limit, func(content string, full int, truncated bool) (int, error) {
			probe := res
			probe.Content, probe.ContentTruncated, probe.ContentBytes = content, truncated, 0
			if truncated {
				probe.ContentBytes = full
			}
			b, err := codec.Marshal(&probe)
			return len(b), err
		})
		if !res.ContentTruncated {
			res.ContentBytes = 0
		}
		if err == nil {
			log.Warn().Int("result_bytes", returned).Int("stored_bytes", len(res.Content)).Msg("result exceeds the server's max payload; answering with it truncated")
			out, err = t.encode(codec, res)
		}
	}
	if err != nil {
		log.Error().Err(err).Msg("encoding the result failed")
		t.nakLater(log, m)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ack, err := t.js.PublishMsg(pctx, out, jetstream.WithMsgID(resultMsgID(res)))
	if err != nil {
		log.Error().Err(err).Msg("publishing the result failed; the call will be redelivered")
		t.nakLater(log, m)
		return
	}
	actx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := m.DoubleAck(actx); err != nil {
		// The result is stored; a redelivery will publish a duplicate the
		// stream discards.
		log.Error().Err(err).Msg("acking the call failed")
		return
	}
	log.Info().Bool("is_error", res.IsError).Bool("duplicate", ack.Duplicate).Uint64("result_seq", ack.Sequence).Msg("call answered")
}

func (t *tool) encode(codec wire.Codec, res wire.ToolResult) (*nats.Msg, error) {
	data, err := codec.Marshal(&res)
	if err != nil {
		return nil, err
	}
	out := &nats.Msg{Subject: t.subjects.Result(res.SessionID), Data: data, Header: nats.Header{}}
	out.Header.Set(wire.HeaderContentType, codec.ContentType())
	return out, nil
}

// resultMsgID identifies a call's result for JetStream deduplication.
func resultMsgID(r wire.ToolResult) string {
	return "result:" + r.SessionID + ":" + r.TurnID + ":" + r.CallID
}

func (t *tool) nakLater(log zerolog.Logger, m message) {
	if err := m.NakWithDelay(publishRetryDelay); err != nil {
		log.Error().Err(err).Msg("nak failed")
	}
}

// term settles a call that must never run. err is logged: validation and
// decode errors name fields, never values.
func (t *tool) term(log zerolog.Logger, m message, reason string, err error) {
	ev := log.Warn()
	if reason == termExpired {
		ev = log.Info()
	}
	ev.Err(err).Str("reason", reason).Msg("call terminated without a result")
	if err := m.TermWithReason(reason); err != nil {
		log.Error().Err(err).Msg("terminating the call failed")
	}
}
