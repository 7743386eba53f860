package scripted

import (
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
)

// Translator reads one call's recorded frames back, as the recorded API's
// adapter would (provider.API.Frames).
type Translator = provider.FrameTranslator

// Finalizer is a Translator's own response-level check.
type Finalizer = provider.FrameFinalizer

// NewChatTranslator is the default translator: Chat Completions frames,
// as openaichat.Adapter reads them.
func NewChatTranslator(provider.Target) Translator {
	return openaichat.NewFrameTranslator()
}
