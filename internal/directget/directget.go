// Package directget reads a stream's records with batch direct gets
// ($JS.API.DIRECT.GET): one request answers with up to a batch of records
// of a subject filter after a sequence, and no consumer is created. Clients
// following a turn (pkg/client) and workers reading a session (internal/bus)
// read this way.
//
// A Getter answers every batch of a connection on one wildcard inbox
// subscription, made once, and tells the batches apart by the inbox's last
// token. A request then costs one publish and its answers: no subscription
// made and removed on the server per request, no channel or goroutine per
// request. (A subscription per request, as a generic request-many does,
// allocates nats.go's default 65,536-slot channel each time: half a
// megabyte per read, which was most of a worker's garbage.)
package directget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The bounds of one batch: the records read ahead of their use (the server
// sends at least one record, whatever its size).
const (
	MaxRecords = 256
	MaxBytes   = 2 << 20
)

// The headers the server sets on each record of a batch direct get and on
// the batch's end: how many records of the subject filter follow, and the
// sequence of the record sent before (0 for the first).
const (
	numPendingHeader = "Nats-Num-Pending"
	lastSeqHeader    = "Nats-Last-Sequence"
)

// Errors. ErrNoResponse: a batch ended with neither a record nor the
// server's end of batch (it timed out), or took nothing while more were
// pending. ErrGap: a batch came with a record missing in its middle (the
// subscription dropped it); read it again.
var (
	ErrNoResponse = errors.New("no response to a direct get")
	ErrGap        = errors.New("a direct get batch came with a record missing")
)

// A Getter reads with batch direct gets on one connection. It is safe for
// concurrent use; its subscription lives as long as the connection.
type Getter struct {
	nc     *nats.Conn
	api    string // the DIRECT.GET subject's prefix, "$JS.API.DIRECT.GET."
	prefix string // the inbox prefix, ending in "."

	once   sync.Once
	subErr error

	mu    sync.Mutex
	next  uint64
	calls map[string]*call
}

// New returns a Getter for js's connection and API prefix.
func New(js jetstream.JetStream) *Getter {
	return &Getter{nc: js.Conn(), api: apiPrefix(js.Options()) + "DIRECT.GET.", calls: map[string]*call{}}
}

// apiPrefix is the JetStream API's subject prefix, as jetstream sends to.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}

// subscribe makes the Getter's one subscription, the first time.
func (g *Getter) subscribe() error {
	g.once.Do(func() {
		g.prefix = g.nc.NewInbox() + "."
		sub, err := g.nc.Subscribe(g.prefix+"*", g.deliver)
		if err != nil {
			g.subErr = fmt.Errorf("directget: subscribe: %w", err)
			return
		}
		// A batch is at most MaxRecords and MaxBytes: the handler only
		// files each record, so the limits are the batches in flight.
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			g.subErr = fmt.Errorf("directget: subscribe: %w", err)
		}
	})
	return g.subErr
}

// call is one batch in flight: what has come of it, and whether it ended.
type call struct {
	msgs []*nats.Msg
	// end is the batch's end of batch (204) or its status (404 or another
	// error), nil while the batch is open.
	end  *nats.Msg
	over bool // more answers came than a batch holds
	done chan struct{}
}

// deliver files an answer with its batch. It runs on the subscription's
// goroutine and never blocks; an answer for no batch (late, after its
// caller gave up) is dropped.
func (g *Getter) deliver(m *nats.Msg) {
	token := strings.TrimPrefix(m.Subject, g.prefix)
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.calls[token]
	if c == nil || c.end != nil {
		return
	}
	if len(m.Data) == 0 && m.Header.Get("Status") != "" {
		c.end = m
		close(c.done)
		return
	}
	if len(c.msgs) >= MaxRecords {
		c.over, c.end = true, m
		close(c.done)
		return
	}
	c.msgs = append(c.msgs, m)
}

// request is a batch direct get's request body.
type request struct {
	Seq      uint64 `json:"seq"`
	NextFor  string `json:"next_by_subj,omitempty"`
	Batch    int    `json:"batch"`
	MaxBytes int    `json:"max_bytes"`
}

// lastRequest asks for the last record of each subject (one here).
type lastRequest struct {
	MultiLast []string `json:"multi_last"`
	Batch     int      `json:"batch"`
}

// Last is the stream sequence of the last record of stream stored on
// subject (a literal subject), 0 if there is none: one direct get.
func (g *Getter) Last(ctx context.Context, stream, subject string) (uint64, error) {
	msgs, _, err := g.get(ctx, stream, lastRequest{MultiLast: []string{subject}, Batch: 1})
	switch {
	case errors.Is(err, errNothing):
		return 0, nil
	case err != nil:
		return 0, err
	case len(msgs) == 0:
		return 0, nil
	}
	r, err := record(msgs[len(msgs)-1])
	if err != nil {
		return 0, err
	}
	return r.Sequence, nil
}

// Batch reads with one batch direct get (at most MaxRecords records and
// MaxBytes) the records of stream stored on filter after sequence after, in
// stream order, and passes each to take. take reports whether it took the
// record; it passes over one it has already (at or before the last it took)
// or on another subject. filter may hold wildcards.
//
// caughtUp reports that the batch ended with the last record stored on
// filter when the server ended it; otherwise more follow: read them from
// the last record taken. A batch that took nothing while more are pending
// is an error, so a caller never reads the same batch in a loop. Without a
// deadline on ctx the connection's request timeout bounds the wait.
func (g *Getter) Batch(ctx context.Context, stream, filter string, after uint64, take func(*jetstream.RawStreamMsg) bool) (caughtUp bool, err error) {
	msgs, end, err := g.get(ctx, stream, request{Seq: after + 1, NextFor: filter, Batch: MaxRecords, MaxBytes: MaxBytes})
	switch {
	case errors.Is(err, errNothing):
		return true, nil
	case err != nil:
		return false, err
	}
	took, pending := 0, uint64(1)
	var prev uint64
	for _, m := range msgs {
		r, err := record(m)
		if err != nil {
			return false, err
		}
		if last, err := strconv.ParseUint(m.Header.Get(lastSeqHeader), 10, 64); err == nil && last != prev {
			return false, ErrGap
		}
		prev = r.Sequence
		if pending, err = strconv.ParseUint(m.Header.Get(numPendingHeader), 10, 64); err != nil {
			pending = 1 // unknown: read on
		}
		if take(r) {
			took++
		}
	}
	// The end of batch counts again what follows if the stream grew
	// while the batch was read.
	if n, err := strconv.ParseUint(end.Header.Get(numPendingHeader), 10, 64); err == nil {
		pending = n
	}
	if last, err := strconv.ParseUint(end.Header.Get(lastSeqHeader), 10, 64); err == nil && last != prev {
		return false, ErrGap // the batch's last records were dropped
	}
	switch {
	case len(msgs) == 0:
		return false, ErrNoResponse
	case took == 0 && pending > 0:
		return false, ErrNoResponse
	}
	return pending == 0, nil
}

// get sends one request and waits for its batch: the records and the end
// of batch, or errNothing if nothing is stored after the sequence (404).
func (g *Getter) get(ctx context.Context, stream string, req any) ([]*nats.Msg, *nats.Msg, error) {
	if err := g.subscribe(); err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, fmt.Errorf("directget: %w", err)
	}
	c := &call{done: make(chan struct{})}
	g.mu.Lock()
	g.next++
	token := strconv.FormatUint(g.next, 36)
	g.calls[token] = c
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.calls, token)
		g.mu.Unlock()
	}()
	if err := g.nc.PublishMsg(&nats.Msg{Subject: g.api + stream, Reply: g.prefix + token, Data: body}); err != nil {
		return nil, nil, fmt.Errorf("directget: %w", err)
	}
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(g.nc.Opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-c.done:
	case <-ctx.Done():
	case <-timeout:
	}
	g.mu.Lock()
	msgs, end, over := c.msgs, c.end, c.over
	g.mu.Unlock()
	switch {
	case over:
		return nil, nil, fmt.Errorf("directget: more than %d answers to one batch", MaxRecords)
	case end == nil:
		// The wait ended first: the caller's context, or no end of batch.
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, ErrNoResponse
	}
	switch status := end.Header.Get("Status"); status {
	case "204":
		return msgs, end, nil
	case "404":
		return nil, nil, errNothing
	case "503":
		return nil, nil, fmt.Errorf("directget: %s: %w", stream, nats.ErrNoResponders)
	default:
		return nil, nil, fmt.Errorf("directget: %s: status %s %s", stream, status, end.Header.Get("Description"))
	}
}

// errNothing: nothing is stored on the filter after the sequence.
var errNothing = errors.New("directget: nothing stored after the sequence")

// record is a batch record as a stream message, from the headers the
// server sets on it.
func record(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	if m.Header.Get(numPendingHeader) == "" {
		return nil, errors.New("directget: the server does not answer batch direct gets")
	}
	subj := m.Header.Get(jetstream.SubjectHeader)
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if subj == "" || err != nil {
		return nil, fmt.Errorf("directget: a record without its subject or sequence (%q)", m.Header.Get(jetstream.SequenceHeader))
	}
	ts, err := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("directget: a record's time stamp: %w", err)
	}
	return &jetstream.RawStreamMsg{Subject: subj, Sequence: seq, Header: m.Header, Data: m.Data, Time: ts}, nil
}
