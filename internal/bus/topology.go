package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnstream/turnstream/pkg/wire"
)

// WorkerConsumer is the durable pull consumer all workers share on TURN_SUBMIT.
const WorkerConsumer = "turn-workers"

// ToolConsumer is the durable consumer name of a tool on TURN_TOOLS.
func ToolConsumer(tool string) string { return "tool-" + tool }

// Topology describes the streams and the worker consumer. Zero fields take
// the defaults documented on each.
type Topology struct {
	// Subjects names the subjects. Default prefix "turn".
	Subjects wire.Subjects
	// Replicas of every stream. Default 1.
	Replicas int
	// Storage of every stream. Default file.
	Storage jetstream.StorageType
	// ChunkMaxAge bounds how long raw chunks are kept. Default 1h.
	ChunkMaxAge time.Duration
	// MessageMaxAge bounds the session logs. Default 0: kept forever.
	MessageMaxAge time.Duration
	// EventMaxAge bounds the audit events. Default 30 days.
	EventMaxAge time.Duration
	// ResultMaxAge bounds tool results. Default 7 days.
	ResultMaxAge time.Duration
	// DeadMaxAge bounds dead-lettered requests. Default 7 days.
	DeadMaxAge time.Duration
	// DuplicateWindow is the Nats-Msg-Id dedupe window of submit, message,
	// tool and result streams. Default 10 minutes.
	DuplicateWindow time.Duration
	// AckWait is how long a worker may hold a turn without a heartbeat
	// before it is redelivered. Default 30s.
	AckWait time.Duration
	// MaxDeliver caps deliveries of one turn request. Default 10; -1 for
	// no cap (workers then count deliveries themselves).
	MaxDeliver int
}

func (t Topology) withDefaults() Topology {
	if t.Replicas <= 0 {
		t.Replicas = 1
	}
	if t.ChunkMaxAge <= 0 {
		t.ChunkMaxAge = time.Hour
	}
	if t.EventMaxAge <= 0 {
		t.EventMaxAge = 30 * 24 * time.Hour
	}
	if t.ResultMaxAge <= 0 {
		t.ResultMaxAge = 7 * 24 * time.Hour
	}
	if t.DeadMaxAge <= 0 {
		t.DeadMaxAge = 7 * 24 * time.Hour
	}
	if t.DuplicateWindow <= 0 {
		t.DuplicateWindow = 10 * time.Minute
	}
	if t.AckWait <= 0 {
		t.AckWait = 30 * time.Second
	}
	if t.MaxDeliver == 0 {
		t.MaxDeliver = 10
	}
	return t
}

// Streams returns the stream configurations of the topology.
func (t Topology) Streams() []jetstream.StreamConfig {
	t = t.withDefaults()
	s := t.Subjects
	base := func(name, kind, desc string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    []string{s.All(kind)},
			Storage:     t.Storage,
			Replicas:    t.Replicas,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Duplicates:  t.DuplicateWindow,
			AllowDirect: true,
			AllowRollup: true,
		}
	}
	submit := base(wire.StreamSubmit, "submit", "turn requests (work queue)")
	submit.Retention = jetstream.WorkQueuePolicy
	submit.Discard = jetstream.DiscardNew

	chunks := base(wire.StreamChunks, "chunk", "raw and normalized provider chunks")
	chunks.MaxAge = t.ChunkMaxAge
	chunks.Duplicates = time.Second // chunks carry no message ids

	messages := base(wire.StreamMessages, "message", "session logs of finalized messages")
	messages.MaxAge = t.MessageMaxAge

	events := base(wire.StreamEvents, "event", "audit session events")
	events.MaxAge = t.EventMaxAge

	tools := base(wire.StreamTools, "tool", "tool calls (work queue)")
	tools.Retention = jetstream.WorkQueuePolicy
	tools.Discard = jetstream.DiscardNew

	results := base(wire.StreamResults, "result", "tool results")
	results.MaxAge = t.ResultMaxAge

	dead := base(wire.StreamDead, "dead", "rejected turn requests")
	dead.MaxAge = t.DeadMaxAge
	dead.Duplicates = time.Second

	return []jetstream.StreamConfig{submit, chunks, messages, events, tools, results, dead}
}

// WorkerConsumerConfig is the durable pull consumer workers share.
func (t Topology) WorkerConsumerConfig() jetstream.ConsumerConfig {
	t = t.withDefaults()
	return jetstream.ConsumerConfig{
		Durable:       WorkerConsumer,
		Description:   "turnstream workers",
		FilterSubject: t.Subjects.All("submit"),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.AckWait,
		MaxDeliver:    t.MaxDeliver,
		MaxAckPending: 10000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// Ensure creates or updates every stream and the worker consumer. It is
// idempotent and safe to run from many workers at once.
func (t Topology) Ensure(ctx context.Context, js jetstream.JetStream) error {
	for _, cfg := range t.Streams() {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("bus: stream %s: %w", cfg.Name, err)
		}
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, wire.StreamSubmit, t.WorkerConsumerConfig()); err != nil {
		return fmt.Errorf("bus: consumer %s: %w", WorkerConsumer, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, t.StateConfig()); err != nil {
		return fmt.Errorf("bus: bucket %s: %w", StateBucket, err)
	}
	return nil
}

// StateConfig is the worker-only state bucket: one value per key, kept as
// long as the session logs it serves.
func (t Topology) StateConfig() jetstream.KeyValueConfig {
	t = t.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      StateBucket,
		Description: "worker-only provider state (never published to clients)",
		History:     1,
		TTL:         t.MessageMaxAge,
		Storage:     t.Storage,
		Replicas:    t.Replicas,
	}
}

// EnsureToolConsumer creates or updates the durable consumer of one tool.
func (t Topology) EnsureToolConsumer(ctx context.Context, js jetstream.JetStream, tool string) (jetstream.Consumer, error) {
	t = t.withDefaults()
	c, err := js.CreateOrUpdateConsumer(ctx, wire.StreamTools, jetstream.ConsumerConfig{
		Durable:       ToolConsumer(tool),
		Description:   "tool workers of " + tool,
		FilterSubject: t.Subjects.Tool(tool),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.AckWait,
		MaxDeliver:    t.MaxDeliver,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: tool consumer %s: %w", tool, err)
	}
	return c, nil
}
