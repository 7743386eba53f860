package responses

import (
	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
)

// NewFrameTranslator reads recorded Responses events back as Adapter
// reads them live (API.Frames), with the same finalization.
func NewFrameTranslator() provider.FrameTranslator {
	return frames{t: NewTranslator()}
}

type frames struct{ t *Translator }

func (f frames) Frame(event string, data []byte) error { return f.t.Event(event, data) }

// Done: a "[DONE]" some proxies append is not a Responses terminal.
func (f frames) Done() {}

func (f frames) Asm() *assemble.Assembler { return f.t.Asm }

// Finalize implements provider.FrameFinalizer.
func (f frames) Finalize() (*assemble.Response, error) { return finalize(f.t) }
