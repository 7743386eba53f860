package toolworker

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnstream/turnstream/internal/bus"
	"github.com/turnstream/turnstream/internal/discovery"
)

// serviceOptions configure the turnstream-tools NATS service Serve
// registers (WithDiscovery, WithVersion).
type serviceOptions struct {
	// off: Serve registers no service. Default false: it does.
	off bool
	// version is the version the service announces. Default: the main
	// module's version in the binary's build info.
	version string
}

// WithDiscovery turns the turnstream-tools NATS service on or off. While
// on, Serve registers the process with nats.go/micro on the JetStream's
// connection, so that `nats micro ls`, `nats micro info turnstream-tools`
// and `nats micro stats turnstream-tools` show it: its version
// (WithVersion), an id, metadata (the claims' owner id of this Serve as
// "instance", the subject prefix), and an endpoint "config" on
// <prefix>.svc.tools.config that answers a JSON summary of the tools
// served and the options (no handler, argument or result; nothing
// secret). STATS gives each tool's binding state and the calls handled,
// by outcome. The service stops when Serve returns. A registration that
// fails, such as one the server's permissions refuse (the tool worker's
// user needs to subscribe to $SRV.* and the config subject and to answer
// requests), is logged at warn and Serve goes on serving. Default on.
func WithDiscovery(on bool) Option {
	return func(o *options) error {
		o.service.off = !on
		return nil
	}
}

// WithVersion sets the version the turnstream-tools service announces:
// the tool worker's release, in any form (a Go module version such as
// "v1.2.3", or anything else, which is announced as the build metadata of
// SemVer 0.0.0). Default: the main module's version in the binary's build
// info, else "devel" with its VCS revision.
func WithVersion(v string) Option {
	return func(o *options) error {
		o.service.version = v
		return nil
	}
}

// register registers the turnstream-tools service of a Serve with owner
// id owner and adds its counters to o's observers; the function it returns
// stops the service (it does nothing when the service is off or was not
// registered, which is logged).
func (o *options) register(nc *nats.Conn, handlers map[string]Handler, owner string) (stop func()) {
	if o.service.off {
		return func() {}
	}
	names := slices.Sorted(maps.Keys(handlers))
	summary := discovery.ToolsConfig{
		Prefix:       o.subjects.Prefix,
		Concurrency:  o.concurrency,
		DrainTimeout: o.drainTimeout.String(),
	}
	for _, name := range names {
		summary.Tools = append(summary.Tools, discovery.ToolConfig{
			Name: name, Subject: o.subjects.Tool(name), Consumer: bus.ToolConsumer(name), Idempotent: o.idempotent[name],
		})
	}
	counts := newServiceStats(names)
	svc, err := discovery.Register(nc, discovery.Spec{
		Name:        discovery.ToolsName,
		Role:        discovery.ToolsRole,
		Description: "turnstream tool worker: serves tool calls from " + o.subjects.Tool("<tool>"),
		Version:     o.service.version,
		Subjects:    o.subjects,
		Instance:    owner,
		Config:      summary,
		Stats:       func() any { return counts.stats() },
		Log:         o.logger,
	})
	if err != nil {
		o.logger.Warn().Err(err).Msg("not registered as a NATS service; serving anyway")
		return func() {}
	}
	o.observers = append(o.observers, counts)
	log := o.logger
	return func() {
		if err := svc.Stop(); err != nil {
			log.Warn().Err(err).Msg("NATS service not stopped cleanly")
		}
	}
}

// serviceStats counts what the turnstream-tools service reports: each
// tool's binding state and its calls by outcome.
type serviceStats struct {
	mu    sync.Mutex
	tools map[string]*toolCounts
	names []string
}

type toolCounts struct {
	state    ToolState
	outcomes map[CallOutcome]uint64
}

func newServiceStats(names []string) *serviceStats {
	s := &serviceStats{tools: make(map[string]*toolCounts, len(names)), names: names}
	for _, n := range names {
		s.tools[n] = &toolCounts{outcomes: map[CallOutcome]uint64{}}
	}
	return s
}

func (s *serviceStats) ToolState(tool string, st ToolState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tools[tool]; t != nil {
		t.state = st
	}
}

func (s *serviceStats) CallDone(tool string, outcome CallOutcome, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tools[tool]; t != nil {
		t.outcomes[outcome]++
	}
}

func (s *serviceStats) stats() discovery.ToolsStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := discovery.ToolsStats{Tools: make([]discovery.ToolStats, 0, len(s.names))}
	for _, name := range s.names {
		t := s.tools[name]
		ts := discovery.ToolStats{Name: name, State: "starting", Outcomes: map[string]uint64{}}
		if t.state != 0 {
			ts.State = t.state.String()
		}
		for outcome, n := range t.outcomes {
			ts.Outcomes[string(outcome)] = n
			ts.Calls += n
		}
		out.Tools = append(out.Tools, ts)
		out.CallsHandled += ts.Calls
	}
	return out
}
