package wire

// TurnRequest asks a worker to run one agent turn. It is published on
// Subjects.Submit(SessionID).
type TurnRequest struct {
	// SessionID must equal the session token of the subject it was published on.
	SessionID string `json:"session_id"`
	// TurnID identifies the turn within its session. It defaults to the
	// Nats-Msg-Id header, else one is generated. Submitting the same turn id
	// twice runs the turn once.
	TurnID string `json:"turn_id,omitempty"`
	// Input is appended to the session log before the first provider call.
	Input []InputMessage `json:"input"`
	// System is an optional system prompt, sent first on every provider call
	// of the turn. It is not written to the session log.
	System string `json:"system,omitempty"`
	// Route names a configured route; empty means "default".
	Route string `json:"route,omitempty"`
	// Tools are offered to the model. Each is served by tool workers on
	// Subjects.Tool(Name).
	Tools []Tool `json:"tools,omitempty"`
	// Budgets may lower the worker's budgets for this turn, never raise them.
	Budgets *Budgets `json:"budgets,omitempty"`
}

// InputMessage is one message a client adds to the session with its turn.
type InputMessage struct {
	// Role is "user" or "system".
	Role Role `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
}

// Tool is a function the model may call.
type Tool struct {
	// Name is a subject token of at most 64 characters.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the call's arguments. Empty means an
	// object with no declared properties.
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Budgets bound one turn. Zero fields mean "the worker's default".
// TurnRequest.Validate rejects a negative value or one above its maximum
// with ReasonInvalidBudgets and the field's path ("budgets.wall_clock_ms").
type Budgets struct {
	// MaxIterations caps provider calls (steps) in the turn. At most
	// MaxBudgetCount.
	MaxIterations int `json:"max_iterations,omitempty"`
	// MaxToolCalls caps tool calls dispatched in the turn. At most
	// MaxBudgetCount.
	MaxToolCalls int `json:"max_tool_calls,omitempty"`
	// MaxRepeatedToolFailures caps failures of the same tool with the same
	// outcome. At most MaxBudgetCount.
	MaxRepeatedToolFailures int `json:"max_repeated_tool_failures,omitempty"`
	// WallClockMS caps the turn's duration in milliseconds. At most
	// MaxBudgetWallClockMS.
	WallClockMS int64 `json:"wall_clock_ms,omitempty"`
}

// Budget maxima. MaxBudgetWallClockMS is 30 days: far below the
// 2^63 ns (about 292 years) where time.Duration(ms)*time.Millisecond
// overflows, so a valid budget converts and adds to a time safely.
const (
	MaxBudgetCount       = 1_000_000
	MaxBudgetWallClockMS = 30 * 24 * 60 * 60 * 1000 // 2,592,000,000
)
