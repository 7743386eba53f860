package config

import (
	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Topology is the JetStream topology a worker configured by c uses: the
// one place it is derived from a config. The worker at start and
// `turnstream streams` both ensure it with bus.EnsureTopology, which
// resolves Replicas 0 against the servers; bus.Topology builds every
// stream, bucket and consumer configuration from it.
func (c *Config) Topology() bus.Topology {
	return bus.Topology{
		Subjects:    wire.Subjects{Prefix: c.NATS.Prefix},
		Replicas:    c.NATS.Replicas,
		AckWait:     c.Worker.AckWait.D(),
		ToolAckWait: c.Worker.ToolAckWait.D(),
		ToolTimeout: c.Worker.ToolTimeout.D(),
	}
}
