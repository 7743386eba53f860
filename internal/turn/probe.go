package turn

// Probe points: the named places of a delivery where a crash test may stop
// the process (Loop.Probe). They are the instants at which a crash leaves a
// different durable state behind.
const (
	ProbeFetched      = "after_fetch"      // the request is delivered, nothing done yet
	ProbeLeased       = "after_lease"      // the session's lease is taken
	ProbeStreaming    = "mid_stream"       // the provider's answer is half streamed
	ProbeAssistant    = "after_assistant"  // the assistant message is on the log
	ProbeDispatched   = "after_dispatch"   // a tool call is dispatched
	ProbeAwaiting     = "awaiting_results" // results are being awaited
	ProbeResult       = "after_result"     // a tool result arrived, not yet on the log
	ProbeBeforeEnding = "before_terminal"  // the turn's end is decided, not yet written
)

// ProbePoints lists every probe point.
var ProbePoints = []string{ProbeFetched, ProbeLeased, ProbeStreaming, ProbeAssistant, ProbeDispatched, ProbeAwaiting, ProbeResult, ProbeBeforeEnding}

func (l *Loop) probe(point string) {
	if l.Probe != nil {
		l.Probe(point)
	}
}
