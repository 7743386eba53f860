package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/history"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/schemas"
)

// TestSchemaStatesDefaults: the config schema's descriptions state the
// defaults the code applies, each declared once in the package that owns
// it.
func TestSchemaStatesDefaults(t *testing.T) {
	b, err := schemas.FS.ReadFile(schemas.Config)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	seconds := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }
	for _, tt := range []struct {
		def, key string
		states   []string // each must follow in the description, as a whole word
	}{
		{"worker", "ack_wait", []string{"Default " + seconds(bus.DefaultAckWait)}},
		{"worker", "max_deliver", []string{"Default " + strconv.Itoa(DefaultMaxDeliver)}},
		{"worker", "tool_timeout", []string{"Default " + seconds(DefaultToolTimeout)}},
		{"worker", "tool_ack_wait", []string{"At least " + seconds(MinToolAckWait), "Default " + seconds(bus.DefaultToolAckWait)}},
		{"provider", "idle_timeout", []string{"Default " + seconds(provider.DefaultIdleTimeout)}},
		{"history", "echo_cap", []string{"Default " + strconv.Itoa(history.DefaultEchoCap)}},
		{"history", "reserve", []string{"Default " + strconv.FormatFloat(history.DefaultReserve, 'f', -1, 64)}},
	} {
		desc := doc.Defs[tt.def].Properties[tt.key].Description
		for _, s := range tt.states {
			if !regexp.MustCompile(regexp.QuoteMeta(s) + `\b`).MatchString(desc) {
				t.Errorf("schema %s.%s description %q does not say %q", tt.def, tt.key, desc, s)
			}
		}
	}
}
