package turn

import (
	"context"
	"time"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Writer publishes one turn's records (implemented by bus.TurnWriter). A
// Writer that also has a MaxRecordBytes() int method reports the largest
// encoded record it can store; tool messages are sized to it.
type Writer interface {
	// Codec is the encoding of the turn's records.
	Codec() wire.Codec
	Chunk(c *wire.Chunk) error
	// Raw publishes a provider frame's bytes to the worker-only raw
	// stream; the frame's chunk carries its normalized delta.
	Raw(f *wire.RawFrame) error
	Event(ev *wire.SessionEvent) error
	Flush(ctx context.Context) error
	Append(ctx context.Context, m *wire.Message) error
	Dispatch(ctx context.Context, call *wire.ToolCall) error
	Terminal(ctx context.Context, ev *wire.SessionEvent) error
}

// pipelinedWriter is a Writer that appends without waiting for the ack
// (bus.TurnWriter): Sync waits for what it published. A Writer without it
// appends synchronously.
type pipelinedWriter interface {
	AppendAsync(ctx context.Context, m *wire.Message) error
	Sync(ctx context.Context) error
}

// pipelinedState is a StateStore that writes without waiting for the ack
// (bus.FencedState): Sync waits for what it published and reports the
// first failure. A StateStore without it writes synchronously.
type pipelinedState interface {
	PutAsync(ctx context.Context, key string, value []byte)
	Sync(ctx context.Context) error
}

// Results delivers valid tool results of the turn's session in arrival order.
type Results interface {
	Next(ctx context.Context) (wire.ToolResult, error)
	Stop()
}

// ResultsOpener starts following the session's tool results from a
// position.
type ResultsOpener func(ctx context.Context, from ResultsFrom) (Results, error)

// ResultsFrom is where a results follower starts: after stream sequence
// After when it is set (the session's last result as read before the
// step's first dispatch: every result of the step is stored after it),
// else at time Since (a resumed step, whose results may be stored
// already), less a margin for the servers' clocks.
type ResultsFrom struct {
	After uint64
	Since time.Time
}

// LastResult reads the stream sequence of the session's last stored tool
// result, 0 if there is none.
type LastResult func(ctx context.Context) (uint64, error)

// Routes resolves a route name to its chain of targets.
type Routes interface {
	Chain(route string) ([]provider.Target, error)
	// ContextTokens is the smallest context window of the route's chain,
	// so history selected for it fits every fallback.
	ContextTokens(route string) int
}

// Executor runs a provider request along a chain (provider.Executor).
type Executor interface {
	Execute(ctx context.Context, chain []provider.Target, req *provider.Request, obs provider.Observer) (*provider.Result, error)
}
