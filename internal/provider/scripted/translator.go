package scripted

import (
	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// Translator turns one call's recorded frames back into operations on an
// assembler, as the adapter of the recorded wire API would. The adapter
// gives it every frame in order, except a "[DONE]" sentinel, which calls
// Done.
type Translator interface {
	// Frame translates one frame: its SSE event name ("" when none) and its
	// data verbatim. It returns a *provider.Failure where the wire adapter
	// would fail the stream on this frame (malformed, in-band error).
	Frame(event string, data []byte) error
	// Done records the stream's terminal "[DONE]" marker.
	Done()
	// Asm is the assembler the frames build.
	Asm() *assemble.Assembler
}

// Finalizer is implemented by a Translator whose wire adapter applies its
// own response-level checks once the stream reached its terminal marker
// (a Responses translator deriving the outcome from the response status).
// Without it, the provider-neutral check applies: a normal stop with
// nothing in it is EMPTY_RESPONSE.
type Finalizer interface {
	// Finalize returns the finalized response, or a *provider.Failure.
	Finalize() (*assemble.Response, error)
}

// NewChatTranslator is the default translator: Chat Completions frames
// through openaichat's translator, as openaichat.Adapter reads them.
func NewChatTranslator(provider.Target) Translator {
	return chatTranslator{t: openaichat.NewTranslator()}
}

type chatTranslator struct{ t *openaichat.Translator }

func (c chatTranslator) Frame(event string, data []byte) error {
	err := c.t.Frame(data)
	if event == "error" && err == nil {
		// As openaichat.Adapter: an error event is a failure even when its
		// payload does not read as one.
		return provider.Fail(provider.ClassServer, "provider error event", nil)
	}
	return err
}

func (c chatTranslator) Done() { c.t.Done() }

func (c chatTranslator) Asm() *assemble.Assembler { return c.t.Asm }
