package anthropic

import (
	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
)

// NewFrameTranslator reads recorded Messages events back as Adapter reads
// them live (API.Frames), with the same finalization and echo.
func NewFrameTranslator() provider.FrameTranslator {
	return frames{t: NewTranslator()}
}

type frames struct{ t *Translator }

func (f frames) Frame(event string, data []byte) error {
	_, err := f.t.Event(event, data)
	return err
}

// Done: Messages has no "[DONE]"; message_stop is its terminal.
func (f frames) Done() {}

func (f frames) Asm() *assemble.Assembler { return f.t.asm }

// Finalize implements provider.FrameFinalizer.
func (f frames) Finalize() (*assemble.Response, error) { return finalize(f.t) }
