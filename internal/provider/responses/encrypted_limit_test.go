package responses

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/internal/assemble"
	"github.com/turnstream/turnstream/internal/provider"
)

// TestEncryptedReasoningCounts: encrypted reasoning, which the translator
// keeps for replay, counts against the reasoning limit, so many reasoning
// items within the event limit cannot pile up unbounded.
func TestEncryptedReasoningCounts(t *testing.T) {
	tr := NewTranslator()
	tr.Asm.SetLimits(provider.DefaultLimits.Content())
	enc := strings.Repeat("A", 200<<10)
	for i := range 300 {
		if err := tr.Event("response.output_item.done", []byte(fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"%s"}}`, i, i, enc))); err != nil {
			break
		}
		if tr.Asm.Err() != nil {
			break
		}
	}
	held := 0
	for _, r := range tr.Reasoning() {
		held += len(r.EncryptedContent)
	}
	if held > provider.DefaultLimits.MaxReasoningBytes {
		t.Errorf("%d bytes of encrypted reasoning held; want at most the %d-byte reasoning limit", held, provider.DefaultLimits.MaxReasoningBytes)
	}
	var le *assemble.LimitError
	if !errors.As(tr.Asm.Err(), &le) || le.Limit != assemble.LimitReasoningBytes {
		t.Errorf("Asm.Err() = %v; want the reasoning limit crossed", tr.Asm.Err())
	}
}
