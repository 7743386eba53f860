package console

import (
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestRejectedNamesField: a rejection's summary names its reason and the
// field it is about.
func TestRejectedNamesField(t *testing.T) {
	var b strings.Builder
	p := NewTurnPrinter(&b)
	p.Print(client.Update{Event: &wire.SessionEvent{Type: wire.EventTurnRejected, Payload: map[string]any{"reason": wire.ReasonUnknownField, "field": "budget"}}})
	if want := "✗ turn.rejected (unknown_field: budget)\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("Print(turn.rejected) = %q; want it to end %q", b.String(), want)
	}
}
