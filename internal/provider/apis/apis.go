// Package apis is the one list of the wire APIs turnstream speaks. Each
// API's package declares its descriptor (provider.API); adding an API is
// that package and one line here.
package apis

import (
	"slices"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/anthropic"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/responses"
	"github.com/turnstream/turnstream/internal/provider/scripted"
)

// registered are the APIs, in the order config and its schema list them.
var registered = []provider.API{
	openaichat.API,
	deepseek.API,
	responses.API,
	anthropic.API,
	scripted.API,
}

// All returns every registered API.
func All() []provider.API { return slices.Clone(registered) }

// Lookup returns the API named name.
func Lookup(name string) (provider.API, bool) {
	i := slices.IndexFunc(registered, func(a provider.API) bool { return a.Name == name })
	if i < 0 {
		return provider.API{}, false
	}
	return registered[i], true
}

// Configurable returns the names config may give as a provider's api.
func Configurable() []string {
	var names []string
	for _, a := range registered {
		if a.Configurable() {
			names = append(names, a.Name)
		}
	}
	return names
}
