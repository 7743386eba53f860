package ops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// The paths a Server serves.
const (
	PathMetrics = "/metrics"
	PathHealth  = "/healthz"
	PathReady   = "/readyz"
)

// Options configure a Server.
type Options struct {
	// Addr is the listen address, host:port (":9090": every interface;
	// port 0: any free port, see Server.Addr). Required.
	Addr string
	// Gatherer is what /metrics serves. Required.
	Gatherer prometheus.Gatherer
	// Ready reports why the process is not ready, nil when it is; /readyz
	// answers 503 with its message, or 200. Called on every request: it
	// must be cheap. Default: always ready.
	Ready func() error
	// Log receives the server's own failures. Default: disabled.
	Log zerolog.Logger
}

// Validate reports options that cannot be used.
func (o Options) Validate() error {
	if o.Addr == "" {
		return errors.New("ops: a listen address is required")
	}
	if o.Gatherer == nil {
		return errors.New("ops: a metrics gatherer is required")
	}
	return nil
}

// Server serves /metrics, /healthz and /readyz until it is closed.
type Server struct {
	ln    net.Listener
	srv   *http.Server
	done  chan struct{}
	close sync.Once
	err   error
}

// shutdownWait bounds how long Close lets requests in flight finish.
const shutdownWait = 5 * time.Second

// Start listens on o.Addr and serves in the background; it returns once
// the address is bound, so that a port in use fails the command at once.
func Start(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ready := o.Ready
	if ready == nil {
		ready = func() error { return nil }
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+PathMetrics, promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
		ErrorLog: promLogger{o.Log}, ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		answer(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET "+PathReady, func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			answer(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		answer(w, http.StatusOK, "ready")
	})
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("ops: listen on %s: %w", o.Addr, err)
	}
	s := &Server{
		ln:   ln,
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error().Err(err).Msg("metrics server stopped")
			s.err = err
		}
	}()
	return s, nil
}

// Addr is the address the server listens on (with the port chosen, for
// port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving: requests in flight get a few seconds to finish. It
// is idempotent and returns the error serving stopped with, if any.
func (s *Server) Close() error {
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.srv.Close() //nolint:errcheck // closing anyway
		}
		<-s.done
	})
	return s.err
}

func answer(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, body)
}

// promLogger passes promhttp's errors (a collector that failed) to the log.
type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) { l.log.Warn().Msg(fmt.Sprint(v...)) }
