package deepseek

import (
	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// NewFrameTranslator reads recorded DeepSeek frames back as Adapter reads
// them live (API.Frames): openaichat's frames, the reasoning the answer's
// echo.
func NewFrameTranslator() provider.FrameTranslator {
	return frames{openaichat.NewFrameTranslator()}
}

type frames struct{ provider.FrameTranslator }

// Finalize implements provider.FrameFinalizer.
func (f frames) Finalize() (*assemble.Response, error) {
	r := f.Asm().Response()
	if err := provider.CheckEmpty(r); err != nil {
		return nil, err
	}
	r.Echo = r.Reasoning
	return r, nil
}
