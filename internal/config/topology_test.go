package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

// configs is every configuration a topology builds, by what it is.
func configs(t bus.Topology) map[string]any {
	return map[string]any{
		"streams":         t.Streams(),
		"worker consumer": t.WorkerConsumerConfig(),
		"tool consumer":   t.ToolConsumerConfig("lookup"),
		"state bucket":    t.StateConfig(),
		"claims bucket":   t.ClaimsConfig(),
	}
}

// TestTopology: a config's topology is built from its nats and worker
// settings, and a config left to its defaults asks for the topology bus
// builds by default: the defaults are the same ones, whoever applies them.
func TestTopology(t *testing.T) {
	var def Config
	def.ApplyDefaults()
	custom := def
	custom.NATS = NATS{Prefix: "acme.turn", Replicas: 3}
	custom.Worker.AckWait = Duration(45 * time.Second)
	custom.Worker.ToolAckWait = Duration(2 * time.Second)
	custom.Worker.ToolTimeout = Duration(10 * time.Minute)
	for _, tt := range []struct {
		name string
		cfg  Config
		want bus.Topology
	}{
		{"defaults", def, bus.Topology{}},
		{"configured", custom, bus.Topology{
			Subjects: wire.Subjects{Prefix: "acme.turn"}, Replicas: 3,
			AckWait: 45 * time.Second, ToolAckWait: 2 * time.Second, ToolTimeout: 10 * time.Minute,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, want := configs(tt.cfg.Topology()), configs(tt.want)
			for what := range want {
				if !reflect.DeepEqual(got[what], want[what]) {
					t.Errorf("Topology() %s =\n%+v\nwant\n%+v", what, got[what], want[what])
				}
			}
		})
	}
}
