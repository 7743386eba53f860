package openaichat

import (
	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
)

// NewFrameTranslator reads recorded Chat Completions frames back as
// Adapter reads them live (API.Frames).
func NewFrameTranslator() provider.FrameTranslator {
	return frames{t: NewTranslator()}
}

type frames struct{ t *Translator }

func (f frames) Frame(event string, data []byte) error {
	err := f.t.Frame(data)
	if event == "error" && err == nil {
		// As Adapter: an error event is a failure even when its payload
		// does not read as one.
		return provider.Fail(provider.ClassServer, "provider error event", nil)
	}
	return err
}

func (f frames) Done() { f.t.Done() }

func (f frames) Asm() *assemble.Assembler { return f.t.Asm }
