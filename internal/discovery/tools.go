package discovery

// ToolsConfig is a tool worker's configuration summary, which its config
// endpoint answers.
type ToolsConfig struct {
	// Prefix is the subject prefix.
	Prefix string `json:"prefix"`
	// Tools are the tools served, by name.
	Tools []ToolConfig `json:"tools"`
	// Concurrency caps the handler runs in flight per tool.
	Concurrency int `json:"concurrency_per_tool"`
	// DrainTimeout bounds the in-flight calls' run after a stop (a Go
	// duration: "10s").
	DrainTimeout string `json:"drain_timeout"`
}

// ToolConfig is one tool served.
type ToolConfig struct {
	Name string `json:"name"`
	// Subject is where its calls are dispatched; Consumer the durable
	// consumer it pulls them from.
	Subject  string `json:"subject"`
	Consumer string `json:"consumer"`
	// Idempotent is whether a call whose claimer died runs again.
	Idempotent bool `json:"idempotent"`
}

// ToolsStats are a tool worker's live counters: STATS shows them as its
// config endpoint's data.
type ToolsStats struct {
	// Tools are the tools served, by name.
	Tools []ToolStats `json:"tools"`
	// CallsHandled counts the delivered calls settled, of every tool and
	// outcome.
	CallsHandled uint64 `json:"calls_handled"`
}

// ToolStats are one tool's counters.
type ToolStats struct {
	Name string `json:"name"`
	// State is where the binding of its consumer stands: "starting"
	// (no attempt yet), "waiting" (for the workers to create the
	// consumer), "bound" or "unbound" (toolworker.ToolState).
	State string `json:"state"`
	// Calls counts its delivered calls settled; Outcomes splits them by
	// outcome (toolworker.CallOutcome: "ok", "error", "retry", ...).
	Calls    uint64            `json:"calls"`
	Outcomes map[string]uint64 `json:"outcomes,omitempty"`
}
