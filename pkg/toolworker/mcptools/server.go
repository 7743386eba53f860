package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

const (
	// stableAfter is how long a session must have run for its end to
	// restart the backoff from its first delay.
	stableAfter = time.Minute
	// maxSendAttempts bounds the sessions a call is offered to when each
	// was closing before the call could be written.
	maxSendAttempts = 3
	// waitDelay bounds how long reaping a command waits for its output
	// pipes once it has exited (a grandchild may hold them).
	waitDelay = 5 * time.Second
)

// implementation is what turnstream tells the servers it is.
var implementation = &mcp.Implementation{Name: "turnstream", Version: "1"}

// server is one MCP server: its current session, and the supervisor that
// restarts it.
type server struct {
	src    Source
	o      *options
	log    zerolog.Logger
	client *mcp.Client
	// http is the HTTP client of a URL source, nil for a command, its
	// responses bounded (boundedTransport); its idle connections are
	// closed when the server stops.
	http *http.Client

	mu  sync.Mutex
	cur *session // the live session; nil while (re)starting
	// changed is closed, and replaced, whenever cur changes.
	changed chan struct{}
	// stopped is closed when the server stops for good (Servers.Close).
	stopped chan struct{}
}

func newServer(src Source, o *options) *server {
	s := &server{
		src: src, o: o,
		log:     o.logger.With().Str("mcp_server", src.Name).Logger(),
		changed: make(chan struct{}),
		stopped: make(chan struct{}),
		// No roots, sampling or elicitation: a tool worker has no user
		// to ask.
		client: mcp.NewClient(implementation, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}),
	}
	if src.URL != "" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		s.http = &http.Client{Transport: boundedTransport{tr}}
	}
	return s
}

// session is one connection to the server: one process of a command, or
// one MCP session of a URL.
type session struct {
	cs *mcp.ClientSession
	// ended is closed once the connection has ended: the process exited,
	// the transport failed, or close was called.
	ended chan struct{}
	// failed is closed when a call found the connection broken, asking the
	// supervisor to replace the session.
	failed   chan struct{}
	failOnce sync.Once
}

func (s *session) fail() { s.failOnce.Do(func() { close(s.failed) }) }

// broken reports whether the session ended or a call found it broken.
func (s *session) broken() bool {
	select {
	case <-s.ended:
		return true
	case <-s.failed:
		return true
	default:
		return false
	}
}

// close ends the session and waits for it; for a command, it closes its
// stdin and reaps the process (SIGTERM, then SIGKILL, if it does not exit
// within the SDK's 5s). It returns how the connection ended: for a command
// the process's exit status.
func (s *session) close() error {
	err := s.cs.Close()
	<-s.ended
	return err
}

// transport is a new transport to the server.
func (s *server) transport() mcp.Transport {
	if s.src.URL != "" {
		return &mcp.StreamableClientTransport{
			Endpoint: s.src.URL, HTTPClient: s.http,
			// Calls get their answers on their own requests; the
			// server's notifications are not needed.
			DisableStandaloneSSE: true,
		}
	}
	cmd := exec.Command(s.src.Command, s.src.Args...)
	if len(s.src.Env) > 0 {
		cmd.Env = cmd.Environ()
		for k, v := range s.src.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stderr = s.o.stderr
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = childAttr()
	return &mcp.CommandTransport{Command: cmd}
}

// connect starts a session: spawns the command or reaches the URL, and
// completes the initialize handshake, within ctx.
func (s *server) connect(ctx context.Context) (*session, error) {
	cs, err := s.client.Connect(ctx, s.transport(), nil)
	if err != nil {
		return nil, err
	}
	sess := &session{cs: cs, ended: make(chan struct{}), failed: make(chan struct{})}
	// Owned by the session: it returns once the connection has ended,
	// which session.close ensures.
	go func() {
		_ = cs.Wait()
		close(sess.ended)
	}()
	return sess, nil
}

// set makes sess the live session, or marks the server down (nil).
func (s *server) set(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != sess {
		s.cur = sess
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// session waits until the server has a live session that is not broken,
// ctx is done or the server stopped for good.
func (s *server) session(ctx context.Context) (*session, error) {
	for {
		s.mu.Lock()
		cur, changed := s.cur, s.changed
		s.mu.Unlock()
		if cur != nil && !cur.broken() {
			return cur, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.stopped:
			return nil, ErrClosed
		}
	}
}

// supervise keeps the server running until ctx is done: it serves sess,
// and whenever the session ends (the process exited) or a call found it
// broken, it starts a new one after a backoff, for as long as it takes.
// It closes the last session before it returns.
func (s *server) supervise(ctx context.Context, sess *session) {
	defer close(s.stopped)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = s.o.restartFirst, s.o.restartMax, 0
	b.Multiplier = 2
	b.Reset()
	restarts := 0
	for {
		s.set(sess)
		began := time.Now()
		var why string
		select {
		case <-ctx.Done():
			s.set(nil)
			if err := sess.close(); err != nil {
				s.log.Debug().Err(err).Msg("MCP server stopped")
			}
			return
		case <-sess.ended:
			why = "the MCP server exited or its connection ended"
		case <-sess.failed:
			why = "a call found the MCP server's connection broken"
		}
		s.set(nil)
		exit := sess.close()
		if time.Since(began) >= stableAfter {
			b.Reset()
		}
		restarts++
		s.log.Warn().AnErr("exit", exit).Str("reason", why).Int("restarts", restarts).Msg("MCP server stopped; restarting it")
		for {
			delay := time.NewTimer(b.NextBackOff())
			select {
			case <-ctx.Done():
				delay.Stop()
				return
			case <-delay.C:
			}
			cctx, cancel := context.WithTimeout(ctx, s.o.startTimeout)
			next, err := s.connect(cctx)
			cancel()
			if err == nil {
				sess = next
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Int("restarts", restarts).Msg("restarting the MCP server failed; retrying")
		}
		s.log.Info().Int("restarts", restarts).Msg("MCP server restarted")
	}
}

// handler calls the server's tool mcpName for each turnstream call.
func (s *server) handler(mcpName string) toolworker.Handler {
	return func(ctx context.Context, call wire.ToolCall) (toolworker.Result, error) {
		log := zerolog.Ctx(ctx).With().Str("mcp_server", s.src.Name).Logger()
		args := strings.TrimSpace(call.Arguments)
		if !strings.HasPrefix(args, "{") {
			return toolworker.Result{Content: "error: the arguments must be a JSON object", IsError: true}, nil
		}
		for attempt := 1; ; attempt++ {
			sess, err := s.session(ctx)
			if err != nil {
				return toolworker.Result{}, err
			}
			res, err := sess.cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpName, Arguments: json.RawMessage(args)})
			var rpcErr *jsonrpc.Error
			switch {
			case err == nil:
				return result(res, s.o.maxContentBytes), nil
			case ctx.Err() != nil:
				// The deadline passed, or Serve's drain timeout: toolworker
				// decides (the turn worker answers an expired call).
				return toolworker.Result{}, ctx.Err()
			case errors.Is(err, mcp.ErrConnectionClosed) && attempt < maxSendAttempts:
				// The connection was closing: the call was never written.
				// It goes to the next session.
				sess.fail()
				log.Debug().Err(err).Int("attempt", attempt).Msg("the MCP server's connection was closing; sending the call to its next session")
				continue
			case errors.Is(err, mcp.ErrConnectionClosed):
				sess.fail()
				log.Warn().Err(err).Msg("the MCP server's connection kept closing; the call was not sent")
				return toolworker.Result{Content: NotSentContent, IsError: true}, nil
			case errors.As(err, &rpcErr):
				// The server answered with a protocol error (an unknown
				// tool, invalid arguments): the session is fine. The
				// message is the server's and may quote arguments: not
				// logged.
				log.Info().Int64("mcp_error_code", rpcErr.Code).Msg("the MCP server refused the call")
				content, _, _ := wire.TruncateContent("error: the MCP server refused the call: "+rpcErr.Message, s.o.maxContentBytes)
				return toolworker.Result{Content: content, IsError: true}, nil
			}
			// The server may have run the call: answered, never sent
			// again. An answer that did not decode leaves the session
			// answering pings: it is kept. Otherwise the connection broke
			// with the call in flight, and the session is replaced.
			if sess.cs.Ping(ctx, nil) == nil {
				log.Warn().Err(err).Msg("the MCP server's answer to the call could not be read; answering tool outcome unknown")
				return toolworker.Result{Content: UnreadableContent, IsError: true}, nil
			}
			sess.fail()
			log.Warn().Err(err).Msg("the MCP server stopped during the call; answering tool outcome unknown")
			return toolworker.Result{Content: ServerStoppedContent, IsError: true}, nil
		}
	}
}

// closeIdle closes the idle HTTP connections of a URL source.
func (s *server) closeIdle() {
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
}
