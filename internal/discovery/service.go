package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/turnstream/turnstream/internal/version"
	"github.com/turnstream/turnstream/pkg/wire"
)

// The services' names: what `nats micro info <name>` takes.
const (
	WorkerName = "turnstream-worker"
	ToolsName  = "turnstream-tools"
)

// The roles' subject tokens: a service's endpoints answer on
// wire.Subjects.Service(role, endpoint).
const (
	WorkerRole = "worker"
	ToolsRole  = "tools"
)

// ConfigEndpoint is the name of the endpoint that answers a process's
// configuration summary.
const ConfigEndpoint = "config"

// checkWait bounds the round trip that tells whether the server refused
// the service's subscriptions.
const checkWait = 2 * time.Second

// Spec describes the service a process registers.
type Spec struct {
	// Name is the service's name (WorkerName, ToolsName). Required.
	Name string
	// Role is the subject token of its endpoints (WorkerRole, ToolsRole).
	// Required.
	Role string
	// Description is a line `nats micro info` shows.
	Description string
	// Version is the binary's version in any form; it is announced as
	// version.Semver(Version). Default: version.String("").
	Version string
	// Subjects carries the deployment's subject prefix. Default
	// wire.DefaultPrefix.
	Subjects wire.Subjects
	// Instance is the id the process names itself by elsewhere (the
	// holder of its leases or claims), shown as metadata "instance".
	Instance string
	// Config is the configuration summary the config endpoint answers: a
	// typed struct, encoded as JSON once, at registration. It must hold
	// no secret.
	Config any
	// Stats returns the live counters STATS shows as the config
	// endpoint's data: a typed struct encoded as JSON. Default: none.
	Stats func() any
	// Log receives the service's asynchronous errors. Default: disabled.
	Log zerolog.Logger
}

// ConfigReply is the config endpoint's answer: who answered (the endpoint
// is served by a queue group, so one instance of the role answers each
// request) and its configuration summary.
type ConfigReply struct {
	Name     string          `json:"name"`
	ID       string          `json:"id"`
	Version  string          `json:"version"`
	Instance string          `json:"instance,omitempty"`
	Config   json.RawMessage `json:"config"`
}

// Service is a registered service. Its methods may be called on a nil
// *Service (a registration that failed): they do nothing.
type Service struct {
	svc  micro.Service
	once sync.Once
	err  error
}

// Register registers the process on nc as the service s describes: it
// answers PING, INFO and STATS and its config endpoint until Stop is
// called or nc closes. It returns an error for an invalid Spec, for a
// subscription nc cannot make (a closed connection), and, wrapping
// ErrRefused, when the server's permissions refuse one of the service's
// subscriptions (seen within a round trip; a refusal that comes later, on
// a reconnect, is only logged by the connection).
func Register(nc *nats.Conn, s Spec) (*Service, error) {
	if nc == nil {
		return nil, errors.New("discovery: nil connection")
	}
	if s.Name == "" || !wire.ValidToken(s.Role) {
		return nil, fmt.Errorf("discovery: a name and a role are required (got %q, %q)", s.Name, s.Role)
	}
	if s.Version == "" {
		s.Version = version.String("")
	}
	prefix := s.Subjects.Prefix
	if prefix == "" {
		prefix = wire.DefaultPrefix
	}
	meta := map[string]string{"prefix": prefix}
	if s.Instance != "" {
		meta["instance"] = s.Instance
	}
	log := s.Log
	cfg := micro.Config{
		Name:        s.Name,
		Version:     version.Semver(s.Version),
		Description: s.Description,
		Metadata:    meta,
		ErrorHandler: func(_ micro.Service, e *micro.NATSError) {
			log.Warn().Str("service", s.Name).Str("subject", e.Subject).Str("error", e.Description).Msg("NATS service error")
		},
	}
	if s.Stats != nil {
		cfg.StatsHandler = func(*micro.Endpoint) any { return s.Stats() }
	}
	config, err := json.Marshal(s.Config)
	if err != nil {
		return nil, fmt.Errorf("discovery: %s: config summary: %w", s.Name, err)
	}
	svc, err := micro.AddService(nc, cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery: %s: %w", s.Name, err)
	}
	info := svc.Info()
	reply, err := json.Marshal(ConfigReply{Name: info.Name, ID: info.ID, Version: info.Version, Instance: s.Instance, Config: config})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("discovery: %s: %w", s.Name, err), svc.Stop())
	}
	subject := s.Subjects.Service(s.Role, ConfigEndpoint)
	answer := micro.HandlerFunc(func(r micro.Request) {
		if err := r.Respond(reply, micro.WithHeaders(micro.Headers{wire.HeaderContentType: {"application/json"}})); err != nil {
			log.Warn().Err(err).Str("service", s.Name).Msg("config summary not sent")
		}
	})
	if err := svc.AddEndpoint(ConfigEndpoint, answer, micro.WithEndpointSubject(subject),
		micro.WithEndpointMetadata(map[string]string{"format": "application/json"})); err != nil {
		return nil, errors.Join(fmt.Errorf("discovery: %s: config endpoint: %w", s.Name, err), svc.Stop())
	}
	if err := refused(nc, s.Name, info.ID, subject); err != nil {
		return nil, errors.Join(err, svc.Stop())
	}
	return &Service{svc: svc}, nil
}

// refused reports, after a round trip to the server, whether it refused a
// subscription of the service: one to a $SRV subject of name (and id) or
// to its config subject. A failed round trip (no server now) reports
// nothing: the subscriptions are made again on the reconnect.
func refused(nc *nats.Conn, name, id, config string) error {
	if nc.FlushTimeout(checkWait) != nil {
		return nil
	}
	last := nc.LastError()
	if !errors.Is(last, nats.ErrPermissionViolation) {
		return nil
	}
	// The server's message is the only place that names the refused
	// subject, so it is matched as text.
	subjects := []string{config}
	for _, verb := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
		for _, kind := range [][2]string{{"", ""}, {name, ""}, {name, id}} {
			if subj, err := micro.ControlSubject(verb, kind[0], kind[1]); err == nil {
				subjects = append(subjects, subj)
			}
		}
	}
	msg := last.Error()
	for _, subj := range subjects {
		if strings.Contains(msg, fmt.Sprintf("Subscription to %q", subj)) {
			return fmt.Errorf("discovery: %s: %w: %w", name, ErrRefused, last)
		}
	}
	return nil
}

// Stop unregisters the service: it stops answering, and drains its
// subscriptions. It is idempotent and returns the first call's error.
func (s *Service) Stop() error {
	if s == nil {
		return nil
	}
	s.once.Do(func() { s.err = s.svc.Stop() })
	return s.err
}

// Info is what the service answers to INFO (its id, version, metadata
// and endpoints).
func (s *Service) Info() micro.Info {
	if s == nil {
		return micro.Info{}
	}
	return s.svc.Info()
}
