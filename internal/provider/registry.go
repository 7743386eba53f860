package provider

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Registration binds an adapter to the provider strings ("routes") it
// serves (LLM-ADAPTER-REGISTRY).
type Registration struct {
	// ID names the registration; Metadata.ID must equal it.
	ID string
	// Routes are the provider strings served. At least one; no duplicates.
	Routes   []string
	Metadata Metadata
	Adapter  Adapter
	// Retry is the policy prepared calls capture.
	Retry RetryPolicy
}

// Registry errors.
var (
	ErrEmptyRoutes       = errors.New("provider: registration has no routes")
	ErrDuplicateRoute    = errors.New("provider: route already registered")
	ErrMetadataMismatch  = errors.New("provider: metadata id does not match registration id")
	ErrNoAdapter         = errors.New("provider: registration has no adapter")
	ErrNotRegistered     = errors.New("provider: registration is not registered")
	ErrUnknownProvider   = errors.New("provider: no registration serves this provider")
	ErrDeprecatedRefusal = errors.New("provider: provider is deprecated and refuses execution")
)

// Handle is what Register returns: it tears down exactly the routes still
// owned by its registration.
type Handle struct {
	r   *Registry
	reg *registered
}

// registered is one live registration; routes point at it.
type registered struct {
	Registration
}

// Registry maps each provider string to at most one registration. It is
// safe for concurrent use; every change is one synchronous section.
type Registry struct {
	mu     sync.RWMutex
	routes map[string]*registered
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{routes: map[string]*registered{}} }

func validate(reg Registration) error {
	if len(reg.Routes) == 0 {
		return fmt.Errorf("%w: %q", ErrEmptyRoutes, reg.ID)
	}
	if reg.Metadata.ID != reg.ID {
		return fmt.Errorf("%w: registration %q, metadata %q", ErrMetadataMismatch, reg.ID, reg.Metadata.ID)
	}
	if reg.Adapter == nil {
		return fmt.Errorf("%w: %q", ErrNoAdapter, reg.ID)
	}
	seen := map[string]bool{}
	for _, route := range reg.Routes {
		if route == "" || seen[route] {
			return fmt.Errorf("%w: %q lists route %q twice or empty", ErrDuplicateRoute, reg.ID, route)
		}
		seen[route] = true
	}
	return nil
}

// frozen copies reg so later changes to the caller's slices do not reach it.
func frozen(reg Registration) *registered {
	reg.Routes = slices.Clone(reg.Routes)
	reg.Metadata.Models = slices.Clone(reg.Metadata.Models)
	if reg.Metadata.Deprecated {
		reg.Metadata.Models = nil // a deprecated provider advertises no models
	}
	return &registered{Registration: reg}
}

// Register adds reg for all its routes or none: empty routes, a duplicate
// route (within reg or already registered) or a metadata id mismatch fail at
// once and change nothing.
func (r *Registry) Register(reg Registration) (*Handle, error) {
	if err := validate(reg); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, route := range reg.Routes {
		if owner, ok := r.routes[route]; ok {
			return nil, fmt.Errorf("%w: %q is served by %q", ErrDuplicateRoute, route, owner.ID)
		}
	}
	x := frozen(reg)
	for _, route := range x.Routes {
		r.routes[route] = x
	}
	return &Handle{r: r, reg: x}, nil
}

// Replace swaps the routes of old for those of next in one synchronous
// section: no lookup sees neither or both. Routes of next owned by a third
// registration fail the swap, which then changes nothing. Calls prepared
// before the swap keep the old adapter and policy.
func (r *Registry) Replace(old *Handle, next Registration) (*Handle, error) {
	if err := validate(next); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, route := range next.Routes {
		if owner, ok := r.routes[route]; ok && owner != old.reg {
			return nil, fmt.Errorf("%w: %q is served by %q", ErrDuplicateRoute, route, owner.ID)
		}
	}
	owned := 0
	for _, route := range old.reg.Routes {
		if r.routes[route] == old.reg {
			owned++
		}
	}
	if owned == 0 {
		return nil, fmt.Errorf("%w: %q", ErrNotRegistered, old.reg.ID)
	}
	for _, route := range old.reg.Routes {
		if r.routes[route] == old.reg {
			delete(r.routes, route)
		}
	}
	x := frozen(next)
	for _, route := range x.Routes {
		r.routes[route] = x
	}
	return &Handle{r: r, reg: x}, nil
}

// Close removes the routes still owned by the handle's registration; routes
// a Replace gave to another registration are left alone. It is idempotent.
func (h *Handle) Close() {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	for _, route := range h.reg.Routes {
		if h.r.routes[route] == h.reg {
			delete(h.r.routes, route)
		}
	}
}

// Lookup returns the registration serving provider.
func (r *Registry) Lookup(provider string) (Registration, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	x, ok := r.routes[provider]
	if !ok {
		return Registration{}, false
	}
	reg := x.Registration
	reg.Routes = slices.Clone(reg.Routes) // the caller's copy must not reach the registry
	reg.Metadata.Models = slices.Clone(reg.Metadata.Models)
	return reg, true
}

// Models returns the models provider advertises: none for a deprecated one.
func (r *Registry) Models(provider string) []Model {
	reg, ok := r.Lookup(provider)
	if !ok {
		return nil
	}
	return slices.Clone(reg.Metadata.Models)
}

// Routes lists the registered provider strings, sorted.
func (r *Registry) Routes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.routes))
	for route := range r.routes {
		out = append(out, route)
	}
	slices.Sort(out)
	return out
}
