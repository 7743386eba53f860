package redact

import (
	"fmt"
	"testing"
)

// workAPIs are the entry points the linearity tests meter.
var workAPIs = []struct {
	name string
	json bool // only for JSON-shaped inputs
	work func(s string) int
}{
	{"Redact", false, func(s string) int { _, n := redactWork(s); return n }},
	{"Contains", false, func(s string) int { _, n := containsWork(s); return n }},
	{"RedactJSON", false, func(s string) int { _, n := redactJSONWork(s); return n }},
	{"Stream", true, func(s string) int { _, n := streamWork(streamFrags(s)); return n }},
}

// TestLinearWork meters every adversarial input at 128 KiB and checks the
// work is linear: at most workPerByte units per input byte, and growing
// with the input, from 16 KiB to 128 KiB, by not much more than the input
// does (a quadratic rule grows 64-fold). It counts work, not time, so it
// does not depend on the machine.
func TestLinearWork(t *testing.T) {
	const (
		n           = 128 << 10
		workPerByte = 200
		maxGrowth   = 8 * 1.5
	)
	for _, adv := range adversarialInputs {
		small, large := adv.gen(n/8), adv.gen(n)
		for _, api := range workAPIs {
			if api.json && !adv.json {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", adv.name, api.name), func(t *testing.T) {
				ws, wl := api.work(small), api.work(large)
				if wl > workPerByte*len(large) {
					t.Errorf("work %d for %d bytes: %.1f per byte; want at most %d", wl, len(large), float64(wl)/float64(len(large)), workPerByte)
				}
				if growth := float64(wl) / float64(max(ws, 1)); growth > maxGrowth*float64(len(large))/float64(len(small)*8) {
					t.Errorf("work grows %.1f-fold from %d to %d bytes (%d to %d); want linear", growth, len(small), len(large), ws, wl)
				}
				t.Logf("%.2f work per byte", float64(wl)/float64(len(large)))
			})
		}
	}
}
