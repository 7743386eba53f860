package history

import (
	"testing"

	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/pkg/wire"
)

// TestEchoFor: an echo goes back only to its API and provider, and, where
// the API's echo is the model's own (Anthropic's signatures), to its
// model; an echo of another name is never sent.
func TestEchoFor(t *testing.T) {
	st := &StepState{V: ReplayVersion, Step: 1, API: "anthropic_messages", Provider: "a", Model: "m", Blocks: 1,
		Calls: []CallIDs{{ID: "c1", ProviderID: "c1"}}, Echo: &Echo{Field: "thinking", Value: "[]"}}
	same := provider.Destination{Target: provider.Target{Provider: "a", Model: "m"}, API: "anthropic_messages",
		Replay: provider.Replay{Native: true, Echo: "thinking", EchoSameModel: true}}
	tests := []struct {
		name string
		d    func(provider.Destination) provider.Destination
		want bool
	}{
		{"same provider and model", func(d provider.Destination) provider.Destination { return d }, true},
		{"another model", func(d provider.Destination) provider.Destination { d.Target.Model = "m2"; return d }, false},
		{"another model, any model of the provider", func(d provider.Destination) provider.Destination {
			d.Target.Model, d.Replay.EchoSameModel = "m2", false
			return d
		}, true},
		{"another provider", func(d provider.Destination) provider.Destination { d.Target.Provider = "b"; return d }, false},
		{"another API", func(d provider.Destination) provider.Destination { d.API = "openai_responses"; return d }, false},
		{"another echo", func(d provider.Destination) provider.Destination { d.Replay.Echo = "reasoning_content"; return d }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := echoFor(st, tt.d(same)); got != tt.want {
				t.Errorf("echoFor() = %v; want %v", got, tt.want)
			}
		})
	}
	if echoFor(nil, same) || echoFor(&StepState{API: "anthropic_messages", Provider: "a", Model: "m"}, same) {
		t.Error("echoFor(no state or no echo) = true; want false")
	}
	// Projected: another model of the provider gets the turn natively,
	// without the thinking.
	log := []wire.Message{
		{TurnID: "t1", Seq: 1, Role: wire.RoleUser, Content: "q"},
		{TurnID: "t1", Seq: 2, Step: 1, Role: wire.RoleAssistant, ToolCalls: []wire.Call{{ID: "c1", Name: "f", Arguments: "{}"}}, Provider: "a", Model: "m"},
		{TurnID: "t1", Seq: 3, Step: 1, Role: wire.RoleTool, ToolCallID: "c1", Content: "r"},
		{TurnID: "t1", Seq: 4, Step: 2, Role: wire.RoleAssistant, Content: "done"},
		{TurnID: "t2", Seq: 5, Role: wire.RoleUser, Content: "again"},
	}
	sel := Select(log, "t2", 1<<30)
	states := States{{"t1", 1}: st}
	for _, tt := range []struct {
		model string
		echo  bool
	}{{"m", true}, {"m2", false}} {
		d := same
		d.Target.Model = tt.model
		d.Model = provider.Model{Name: tt.model, Capabilities: provider.Capabilities{Text: true, Tools: true, NativeToolHistory: true}}
		p, err := NewProjection(&sel, states, Options{}).Project(d)
		if err != nil {
			t.Fatal(err)
		}
		var got *provider.Message
		for i := range p.Messages {
			if len(p.Messages[i].ToolCalls) > 0 {
				got = &p.Messages[i]
			}
		}
		if got == nil || (got.Reasoning != nil) != tt.echo {
			t.Errorf("to model %s: tool-call message %+v; want native, echo %v", tt.model, got, tt.echo)
		}
	}
}
