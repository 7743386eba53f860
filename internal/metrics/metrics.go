package metrics

import (
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Names of the metrics a Set registers, for docs and tests.
const (
	TurnsTotal             = "turnstream_turns_total"
	DeliveriesTotal        = "turnstream_deliveries_total"
	TurnLatency            = "turnstream_turn_latency_seconds"
	TurnsInFlight          = "turnstream_turns_in_flight"
	RedeliveriesTotal      = "turnstream_redeliveries_total"
	FencedWritesTotal      = "turnstream_fenced_writes_total"
	StepsTotal             = "turnstream_steps_total"
	ProviderRequestsTotal  = "turnstream_provider_requests_total"
	ProviderRetriesTotal   = "turnstream_provider_retries_total"
	ProviderFallbacksTotal = "turnstream_provider_fallbacks_total"
	FirstChunk             = "turnstream_provider_first_chunk_seconds"
	InputTokensTotal       = "turnstream_input_tokens_total"
	CachedInputTokensTotal = "turnstream_cached_input_tokens_total"
	OutputTokensTotal      = "turnstream_output_tokens_total"
	PublishAckLag          = "turnstream_publish_ack_seconds"
	ToolCallsTotal         = "turnstream_tool_calls_total"
	ToolCallDuration       = "turnstream_tool_call_seconds"
)

// Label values the Set gives itself.
const (
	// OutcomeCompleted, OutcomeFailed and OutcomeRejected are the
	// outcomes of TurnsTotal.
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeRejected  = "rejected"
	// ClassOK is the class of a provider request that succeeded.
	ClassOK = "ok"
	// RouteSummary is the route label of executions that are not a
	// turn's step (history summaries), whose route the executor is not
	// told.
	RouteSummary = "history_summary"
)

// Set is one process's metrics and their registry. Its methods are safe
// for concurrent use; those the worker calls on every delivery do nothing
// on a nil *Set, so a process without --metrics-addr pays nothing.
type Set struct {
	reg *prometheus.Registry

	turns        *prometheus.CounterVec
	deliveries   *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	redeliveries prometheus.Counter
	fenced       prometheus.Counter
	ackLag       prometheus.Histogram

	steps        *prometheus.CounterVec
	requests     *prometheus.CounterVec
	retries      *prometheus.CounterVec
	fallbacks    *prometheus.CounterVec
	firstChunk   *prometheus.HistogramVec
	inputTokens  *prometheus.CounterVec
	cachedTokens *prometheus.CounterVec
	outputTokens *prometheus.CounterVec

	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
}

// New registers every metric, with the Go and process collectors, on a
// registry of its own.
func New() *Set {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	target := []string{"provider", "model"}
	s := &Set{
		reg: reg,
		turns: f.counters(TurnsTotal, "Turns that ended, by outcome (completed, failed, rejected) and reason "+
			"(the turn.failed or turn.rejected reason; empty when completed).", "outcome", "reason"),
		deliveries: f.counters(DeliveriesTotal, "Deliveries of turn requests the worker settled, by the path they took "+
			"(completed, failed, duplicate, ended, waiting, interrupted, fenced, shutdown, ...).", "outcome"),
		latency: f.histograms(TurnLatency, "Time from a turn's submission (its request's store time) to its end, by outcome.",
			[]float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}, "outcome"),
		inFlight: f.gauge(TurnsInFlight, "Deliveries of turn requests the worker holds now: decoding, running, "+
			"or parked until their session's earlier turn ends."),
		redeliveries: f.counter(RedeliveriesTotal, "Deliveries of a turn request that were not its first."),
		fenced: f.counter(FencedWritesTotal, "Deliveries stopped by a write the session lease's fence refused "+
			"(another delivery took the lease: this one was a zombie)."),
		ackLag: f.histogram(PublishAckLag, "Time from publishing a turn's chunk, raw frame or event to the stream's ack.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30}),

		steps: f.counters(StepsTotal, "Turn steps whose provider execution ran, by route.", "route"),
		requests: f.counters(ProviderRequestsTotal, "Provider attempts, by target and class (ok, or the failure class).",
			append(target, "class")...),
		retries: f.counters(ProviderRetriesTotal, "Provider attempts retried on their target, by target and failure class.",
			append(target, "class")...),
		fallbacks: f.counters(ProviderFallbacksTotal, "Moves down a route's chain, by the target fallen back from and its failure class.",
			append(target, "class")...),
		firstChunk: f.histograms(FirstChunk, "Time from sending a provider attempt to its first streamed frame, by target.",
			[]float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, target...),
		inputTokens: f.counters(InputTokensTotal, "Input tokens the providers reported, cached ones included, by route.", "route"),
		cachedTokens: f.counters(CachedInputTokensTotal, "Input tokens the providers reported read from their cache, by route.",
			"route"),
		outputTokens: f.counters(OutputTokensTotal, "Output tokens the providers reported, reasoning ones included, by route.",
			"route"),

		toolCalls: f.counters(ToolCallsTotal, "Tool calls a tool worker handled, by tool and outcome "+
			"(ok, error, unknown, replayed, retry, rejected, expired).", "tool", "outcome"),
		toolDuration: f.histograms(ToolCallDuration, "Time a tool worker took over a call, from its delivery to its settlement, by tool.",
			[]float64{.005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300}, "tool"),
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return s
}

// Gatherer is what /metrics serves.
func (s *Set) Gatherer() prometheus.Gatherer { return s.reg }

// factory registers metrics on one registry.
type factory struct{ reg *prometheus.Registry }

func (f factory) counters(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) histograms(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

// DeliveryStarted counts a delivery the worker starts to run (a
// redelivered one when it is not the request's first); done ends it.
func (s *Set) DeliveryStarted(redelivered bool) (done func()) {
	if s == nil {
		return func() {}
	}
	if redelivered {
		s.redeliveries.Inc()
	}
	s.inFlight.Inc()
	return s.inFlight.Dec
}

// DeliverySettled counts a settled delivery by the path it took (what, as
// turn.Verdict.What names it), and a turn that ended (what
// wire.EventTurnCompleted or wire.EventTurnFailed, with its failure
// reason) with its latency from submitted. A delivery whose error wraps
// wire.ErrFenced is a fenced write.
func (s *Set) DeliverySettled(what, reason string, err error, submitted time.Time) {
	if s == nil {
		return
	}
	outcome := strings.TrimPrefix(what, "turn.")
	s.deliveries.WithLabelValues(outcome).Inc()
	if errors.Is(err, wire.ErrFenced) {
		s.fenced.Inc()
	}
	if what != wire.EventTurnCompleted && what != wire.EventTurnFailed {
		return
	}
	s.turns.WithLabelValues(outcome, reason).Inc()
	if !submitted.IsZero() {
		s.latency.WithLabelValues(outcome).Observe(max(time.Since(submitted), 0).Seconds())
	}
}

// Rejected counts a request rejected as invalid, by its reason
// (wire.RejectReason, or the worker's own: poison, internal_error).
func (s *Set) Rejected(reason string) {
	if s == nil {
		return
	}
	s.turns.WithLabelValues(OutcomeRejected, reason).Inc()
}

// PublishAcked records a publish-to-ack lag (bus.AckOptions.Acked).
func (s *Set) PublishAcked(lag time.Duration) {
	if s == nil {
		return
	}
	s.ackLag.Observe(lag.Seconds())
}
