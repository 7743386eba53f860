package provider_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/scripted"
)

// reg is a registration id serving routes, with one model "m".
func reg(id string, routes ...string) provider.Registration {
	return provider.Registration{
		ID:       id,
		Routes:   routes,
		Metadata: provider.Metadata{ID: id, API: scripted.API.Name, Models: []provider.Model{model("m")}},
		Adapter:  &fakeAdapter{name: id},
	}
}

// owners maps every registered route to the ID of its registration.
func owners(t *testing.T, r *provider.Registry) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, route := range r.Routes() {
		x, ok := r.Lookup(route)
		if !ok {
			t.Fatalf("Lookup(%q) = _, false for a listed route; want true", route)
		}
		out[route] = x.ID
	}
	return out
}

func mustRegister(t *testing.T, r *provider.Registry, x provider.Registration) *provider.Handle {
	t.Helper()
	h, err := r.Register(x)
	if err != nil {
		t.Fatalf("Register(%q) error = %v; want nil", x.ID, err)
	}
	return h
}

func TestRegistryRegister(t *testing.T) {
	mismatch := reg("a", "r1")
	mismatch.Metadata.ID = "b"
	noAdapter := reg("a", "r1")
	noAdapter.Adapter = nil
	tests := []struct {
		name    string
		before  []provider.Registration
		reg     provider.Registration
		wantErr error
		want    map[string]string // route -> registration id afterwards
	}{
		{"one route", nil, reg("a", "r1"), nil, map[string]string{"r1": "a"}},
		{"several routes", nil, reg("a", "r1", "r2", "r3"), nil, map[string]string{"r1": "a", "r2": "a", "r3": "a"}},
		{"beside another", []provider.Registration{reg("a", "r1")}, reg("b", "r2"), nil, map[string]string{"r1": "a", "r2": "b"}},
		{"no routes", nil, reg("a"), provider.ErrEmptyRoutes, map[string]string{}},
		{"empty route", nil, reg("a", "r1", ""), provider.ErrDuplicateRoute, map[string]string{}},
		{"duplicate within", nil, reg("a", "r1", "r2", "r1"), provider.ErrDuplicateRoute, map[string]string{}},
		{"duplicate across", []provider.Registration{reg("a", "r1")}, reg("b", "r1"), provider.ErrDuplicateRoute, map[string]string{"r1": "a"}},
		{
			"conflict on the third route is all-or-nothing",
			[]provider.Registration{reg("a", "r3")}, reg("b", "r1", "r2", "r3", "r4"),
			provider.ErrDuplicateRoute, map[string]string{"r3": "a"},
		},
		{"metadata id mismatch", nil, mismatch, provider.ErrMetadataMismatch, map[string]string{}},
		{"nil adapter", []provider.Registration{reg("x", "r9")}, noAdapter, provider.ErrNoAdapter, map[string]string{"r9": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := provider.NewRegistry()
			for _, b := range tt.before {
				mustRegister(t, r, b)
			}
			h, err := r.Register(tt.reg)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Register(%q %q) error = %v; want %v", tt.reg.ID, tt.reg.Routes, err, tt.wantErr)
			}
			if (h == nil) != (err != nil) {
				t.Errorf("Register(%q %q) handle = %v with error %v; want a handle exactly when it succeeds", tt.reg.ID, tt.reg.Routes, h, err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "provider: ") {
				t.Errorf("Register() error = %q; want the package prefix", err)
			}
			if got := owners(t, r); !maps.Equal(got, tt.want) {
				t.Errorf("routes after Register(%q %q) = %v; want %v", tt.reg.ID, tt.reg.Routes, got, tt.want)
			}
		})
	}
}

// TestRegistryFrozen: neither the caller's registration nor a Lookup result
// reaches into the registry.
func TestRegistryFrozen(t *testing.T) {
	r := provider.NewRegistry()
	x := reg("a", "r1", "r2")
	h := mustRegister(t, r, x)
	x.Routes[0] = "changed"
	x.Metadata.Models[0].Name = "changed"

	got, _ := r.Lookup("r1")
	got.Routes[1] = "changed"
	got.Metadata.Models[0].Capabilities.Tools = false

	if got := r.Routes(); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Errorf("Routes() = %q; want %q", got, []string{"r1", "r2"})
	}
	models := r.Models("r2")
	if len(models) != 1 || models[0].Name != "m" || !models[0].Capabilities.Tools {
		t.Errorf("Models(%q) = %+v; want model %q with tools, unchanged", "r2", models, "m")
	}
	h.Close()
	if got := r.Routes(); len(got) != 0 {
		t.Errorf("Routes() after Close = %q; want none", got)
	}
}

func TestHandleClose(t *testing.T) {
	t.Run("removes its routes and is idempotent", func(t *testing.T) {
		r := provider.NewRegistry()
		h := mustRegister(t, r, reg("a", "r1", "r2"))
		mustRegister(t, r, reg("b", "r3"))
		h.Close()
		h.Close()
		if got, want := owners(t, r), map[string]string{"r3": "b"}; !maps.Equal(got, want) {
			t.Errorf("routes after Close = %v; want %v", got, want)
		}
	})
	t.Run("after a Replace leaves the new owner's routes", func(t *testing.T) {
		r := provider.NewRegistry()
		old := mustRegister(t, r, reg("a", "r1", "r2"))
		if _, err := r.Replace(old, reg("a2", "r1", "r2")); err != nil {
			t.Fatalf("Replace() error = %v; want nil", err)
		}
		old.Close()
		if got, want := owners(t, r), map[string]string{"r1": "a2", "r2": "a2"}; !maps.Equal(got, want) {
			t.Errorf("routes after Close of the replaced handle = %v; want %v", got, want)
		}
	})
	t.Run("after re-registration by another leaves it alone", func(t *testing.T) {
		r := provider.NewRegistry()
		old := mustRegister(t, r, reg("a", "r1"))
		old.Close()
		mustRegister(t, r, reg("b", "r1"))
		old.Close()
		if got, want := owners(t, r), map[string]string{"r1": "b"}; !maps.Equal(got, want) {
			t.Errorf("routes after a second Close = %v; want %v", got, want)
		}
	})
}

func TestRegistryReplace(t *testing.T) {
	tests := []struct {
		name    string
		before  []provider.Registration // before[0] is replaced
		next    provider.Registration
		wantErr error
		want    map[string]string
	}{
		{
			"same routes",
			[]provider.Registration{reg("a", "r1", "r2"), reg("c", "r9")}, reg("b", "r1", "r2"),
			nil, map[string]string{"r1": "b", "r2": "b", "r9": "c"},
		},
		{
			"different route set",
			[]provider.Registration{reg("a", "r1", "r2")}, reg("b", "r2", "r3"),
			nil, map[string]string{"r2": "b", "r3": "b"},
		},
		{
			"route owned by a third registration",
			[]provider.Registration{reg("a", "r1", "r2"), reg("c", "r3")}, reg("b", "r1", "r2", "r3"),
			provider.ErrDuplicateRoute, map[string]string{"r1": "a", "r2": "a", "r3": "c"},
		},
		{
			"invalid next",
			[]provider.Registration{reg("a", "r1")}, reg("b"),
			provider.ErrEmptyRoutes, map[string]string{"r1": "a"},
		},
		{
			"duplicate within next",
			[]provider.Registration{reg("a", "r1")}, reg("b", "r1", "r1"),
			provider.ErrDuplicateRoute, map[string]string{"r1": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := provider.NewRegistry()
			old := mustRegister(t, r, tt.before[0])
			for _, b := range tt.before[1:] {
				mustRegister(t, r, b)
			}
			h, err := r.Replace(old, tt.next)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Replace(%q -> %q %q) error = %v; want %v", tt.before[0].ID, tt.next.ID, tt.next.Routes, err, tt.wantErr)
			}
			if got := owners(t, r); !maps.Equal(got, tt.want) {
				t.Errorf("routes after Replace = %v; want %v", got, tt.want)
			}
			if err != nil {
				return
			}
			h.Close()
			for route, id := range tt.want {
				if id == tt.next.ID {
					if _, ok := r.Lookup(route); ok {
						t.Errorf("Lookup(%q) after closing the new handle = _, true; want false", route)
					}
				}
			}
		})
	}
	t.Run("stale handle", func(t *testing.T) {
		r := provider.NewRegistry()
		old := mustRegister(t, r, reg("a", "r1"))
		if _, err := r.Replace(old, reg("b", "r1")); err != nil {
			t.Fatalf("Replace() error = %v; want nil", err)
		}
		if _, err := r.Replace(old, reg("c", "r5")); !errors.Is(err, provider.ErrNotRegistered) {
			t.Errorf("Replace(stale handle, free route) error = %v; want %v", err, provider.ErrNotRegistered)
		}
		if _, err := r.Replace(old, reg("c", "r1")); err == nil {
			t.Errorf("Replace(stale handle, route of another) error = nil; want an error")
		}
		if got, want := owners(t, r), map[string]string{"r1": "b"}; !maps.Equal(got, want) {
			t.Errorf("routes = %v; want %v", got, want)
		}
	})
}

// TestRegistryReplaceAtomic: lookups racing with replaces never see a route
// missing, nor a partial route set (run under -race).
func TestRegistryReplaceAtomic(t *testing.T) {
	r := provider.NewRegistry()
	h := mustRegister(t, r, reg("gen0", "r1", "r2", "r3"))
	ids := map[string]bool{"gen0": true}
	const replaces = 500
	next := make([]provider.Registration, replaces)
	for i := range next {
		next[i] = reg(fmt.Sprintf("gen%d", i+1), "r1", "r2", "r3")
		ids[next[i].ID] = true
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, route := range []string{"r1", "r2", "r3"} {
					x, ok := r.Lookup(route)
					if !ok || !ids[x.ID] {
						errs <- "Lookup(" + route + ") = " + x.ID + ", false during a Replace; want a registration"
						return
					}
				}
				if got := r.Routes(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
					errs <- "Routes() = " + strings.Join(got, ",") + " during a Replace; want r1,r2,r3"
					return
				}
			}
		})
	}
	for _, n := range next {
		var err error
		if h, err = r.Replace(h, n); err != nil {
			t.Errorf("Replace(%q) error = %v; want nil", n.ID, err)
			break
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if x, _ := r.Lookup("r2"); x.ID != next[replaces-1].ID {
		t.Errorf("Lookup(r2) after the replaces = %q; want %q", x.ID, next[replaces-1].ID)
	}
}

func TestRegistryDeprecated(t *testing.T) {
	r := provider.NewRegistry()
	x := registration(targetA, &fakeAdapter{name: "a"}, provider.RetryPolicy{})
	x.Metadata.Deprecated = true
	mustRegister(t, r, x)

	got, ok := r.Lookup(targetA.Provider)
	if !ok || got.ID != targetA.Provider || !got.Metadata.Deprecated {
		t.Errorf("Lookup(%q) = %q deprecated=%v, %v; want the deprecated registration, true", targetA.Provider, got.ID, got.Metadata.Deprecated, ok)
	}
	if models := r.Models(targetA.Provider); len(models) != 0 {
		t.Errorf("Models(%q) = %+v; want none for a deprecated provider", targetA.Provider, models)
	}
	if models := got.Metadata.Models; len(models) != 0 {
		t.Errorf("Lookup(%q).Metadata.Models = %+v; want none", targetA.Provider, models)
	}
	pc, err := r.Prepare(targetA, testRequest())
	var f *provider.Failure
	if pc != nil || !errors.As(err, &f) || f.Class != provider.ClassDeprecated || f.Reason != provider.SkipDeprecated {
		t.Fatalf("Prepare(%s) = %v, %v; want nil and a %s failure with reason %s", targetA, pc, err, provider.ClassDeprecated, provider.SkipDeprecated)
	}
	if !errors.Is(err, provider.ErrDeprecatedRefusal) || !strings.Contains(err.Error(), "DEPRECATED") {
		t.Errorf("Prepare(%s) error = %q; want it to say the provider is deprecated and wrap ErrDeprecatedRefusal", targetA, err)
	}
}

func TestRegistryModelsUnknown(t *testing.T) {
	r := provider.NewRegistry()
	if got := r.Models("nope"); got != nil {
		t.Errorf("Models(%q) = %+v; want nil", "nope", got)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Errorf("Lookup(%q) = _, true; want false", "nope")
	}
	if got := r.Routes(); len(got) != 0 {
		t.Errorf("Routes() = %q; want none", got)
	}
}
