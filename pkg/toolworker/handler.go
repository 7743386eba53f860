package toolworker

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/pkg/wire"
)

// Result is a tool's answer to one call. Content is what the model reads;
// IsError marks it as a failure report. A Content too large for the
// server's max payload is delivered cut to fit, ending with a marker that
// tells the model how many bytes the tool returned (wire.TruncateContent).
type Result struct {
	Content string
	IsError bool
}

// Handler runs one call of a tool. ctx carries the call's deadline, and is
// cancelled when Serve's drain timeout expires or when another delivery of
// the call took its claim over (this tool worker was stopped for longer
// than the claim could wait; what this run returns is then dropped); a
// Handler must return when ctx is done. A call runs at most once unless its
// tool is declared idempotent (WithIdempotent). A returned error becomes an error result whose content is the
// error's message; a panic becomes the error result "tool panicked".
// zerolog.Ctx(ctx) is a logger enriched with the call's identifiers.
type Handler func(ctx context.Context, call wire.ToolCall) (Result, error)

// panicContent is the content of the result of a handler that panicked.
const panicContent = "tool panicked"

// invoke runs h and turns its error or panic into an error result.
func invoke(ctx context.Context, h Handler, call wire.ToolCall) (res Result) {
	defer func() {
		if v := recover(); v != nil {
			// The panic value may hold arguments or results: log its type only.
			zerolog.Ctx(ctx).Error().
				Str("panic_type", fmt.Sprintf("%T", v)).
				Bytes("stack", debug.Stack()).
				Msg("tool handler panicked")
			res = Result{Content: panicContent, IsError: true}
		}
	}()
	r, err := h(ctx, call)
	if err != nil {
		return Result{Content: err.Error(), IsError: true}
	}
	return r
}
