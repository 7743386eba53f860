package mcptools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Servers are running MCP servers and the turnstream tools they serve.
// Start them, serve Handlers with toolworker.Serve (with
// toolworker.WithIdempotent(Idempotent()...) when it names any), and
// Close them once Serve has returned.
type Servers struct {
	servers    []*server
	tools      []wire.Tool // sorted by name
	handlers   map[string]toolworker.Handler
	idempotent []string // sorted

	// stop ends the supervisors, one per server.
	stop        context.CancelFunc
	supervisors sync.WaitGroup
	closeOnce   sync.Once
}

// Start starts each source's server (spawns its command, or opens a
// session with its URL), reads its whole tool list (tools/list, every
// page) and makes a turnstream tool of each listed tool, named with the
// source's Prefix, its parameters the tool's input schema. ctx bounds the
// start only; the servers run until Close, and one that stops is
// restarted (see the package doc).
//
// A listed tool is refused, with an error logged, when its name (prefix
// included) is not a valid turnstream tool name (1-64 characters of
// [A-Za-z0-9_-]), when an earlier source, an earlier tool of the same
// list or WithReserved took the name, or when no TurnRequest could offer
// it (its input schema is not an object, or is too large or too deep).
// Names are never rewritten.
//
// Start fails if a source is invalid, if a server cannot be started or
// its tools cannot be listed within WithStartTimeout, or if no tool is
// left to serve (ErrNoTools); it then stops what it started.
func Start(ctx context.Context, sources []Source, opts ...Option) (*Servers, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("%w: no sources", ErrInvalidSource)
	}
	for _, src := range sources {
		if err := src.Validate(); err != nil {
			return nil, err
		}
	}
	sources, err := named(sources)
	if err != nil {
		return nil, err
	}

	s := &Servers{handlers: map[string]toolworker.Handler{}}
	var sessions []*session
	owners := map[string]string{} // tool name -> the server serving it ("": reserved)
	for name := range o.reserved {
		owners[name] = ""
	}
	for _, src := range sources {
		srv := newServer(src, &o)
		sess, listed, err := srv.first(ctx)
		if err != nil {
			closeAll(sessions)
			return nil, fmt.Errorf("mcptools: server %s: %w", src.Name, err)
		}
		s.servers, sessions = append(s.servers, srv), append(sessions, sess)
		refused := 0
		for _, t := range listed {
			name := src.Prefix + t.Name
			def, reason := admit(name, t, owners)
			if reason != "" {
				refused++
				srv.log.Error().Str("mcp_tool", clip(t.Name)).Str("tool", clip(name)).Str("reason", reason).Msg("MCP tool refused")
				continue
			}
			owners[name] = src.Name
			s.tools = append(s.tools, def)
			s.handlers[name] = srv.handler(t.Name)
			if idempotent(t) {
				s.idempotent = append(s.idempotent, name)
			}
			srv.log.Debug().Str("mcp_tool", t.Name).Str("tool", name).Bool("idempotent", idempotent(t)).Msg("MCP tool served")
		}
		srv.log.Info().Int("tools", len(listed)-refused).Int("refused", refused).Msg("MCP server started")
	}
	if len(s.handlers) == 0 {
		closeAll(sessions)
		return nil, ErrNoTools
	}
	slices.SortFunc(s.tools, func(a, b wire.Tool) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(s.idempotent)

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	for i, srv := range s.servers {
		s.supervisors.Go(func() { srv.supervise(runCtx, sessions[i]) })
	}
	return s, nil
}

// first starts the server for the first time and reads its tool list,
// within the start timeout.
func (s *server) first(ctx context.Context) (*session, []*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.startTimeout)
	defer cancel()
	sess, err := s.connect(ctx)
	if err != nil {
		s.closeIdle()
		return nil, nil, err
	}
	tools, err := listTools(ctx, sess.cs)
	if err != nil {
		_ = sess.close()
		s.closeIdle()
		return nil, nil, err
	}
	return sess, tools, nil
}

// admit returns the definition serving the MCP tool t as name, or why it
// is refused.
func admit(name string, t *mcp.Tool, owners map[string]string) (wire.Tool, string) {
	if !wire.ValidToolName(name) {
		return wire.Tool{}, "the name is not a valid turnstream tool name (1-64 characters of [A-Za-z0-9_-]); give the server a different prefix or rename the tool"
	}
	if owner, taken := owners[name]; taken {
		if owner == "" {
			return wire.Tool{}, "another tool of this tool worker has the name; give the server a prefix"
		}
		return wire.Tool{}, "the MCP server " + owner + " already serves a tool of this name; give one of the servers a prefix"
	}
	def := definition(name, t)
	if err := checkDefinition(def, t.InputSchema); err != nil {
		return wire.Tool{}, "no turn could offer it: " + err.Error()
	}
	return def, ""
}

// clip bounds a name taken from a server for the log.
func clip(s string) string {
	if len(s) > 128 {
		return s[:128] + "..."
	}
	return s
}

func closeAll(sessions []*session) {
	for _, sess := range sessions {
		_ = sess.close()
	}
}

// Tools returns the definitions of the served tools, sorted by name, to
// offer in a TurnRequest: each one's name, the MCP tool's description and
// its input schema as the parameters. The Parameters maps are shared:
// callers must not change them.
func (s *Servers) Tools() []wire.Tool { return slices.Clone(s.tools) }

// Handlers returns the served tools' handlers, keyed by tool name, for
// toolworker.Serve (which may serve them with other handlers: pass their
// names to WithReserved).
func (s *Servers) Handlers() map[string]toolworker.Handler { return maps.Clone(s.handlers) }

// Idempotent names the served tools whose server hints that they are
// read-only or idempotent (MCP annotations readOnlyHint or
// idempotentHint), for toolworker.WithIdempotent; the others are not. It
// may be empty.
func (s *Servers) Idempotent() []string { return slices.Clone(s.idempotent) }

// Close stops the servers and waits for them: a command's stdin is
// closed, and it is sent SIGTERM, then SIGKILL, if it has not exited
// within 5s each; a URL's session is ended. Calls still waiting for a
// server fail with ErrClosed. Close is idempotent; call it after
// toolworker.Serve has returned, so no call is cut short.
func (s *Servers) Close() {
	s.closeOnce.Do(func() {
		s.stop()
		s.supervisors.Wait()
		for _, srv := range s.servers {
			srv.closeIdle()
		}
	})
}
