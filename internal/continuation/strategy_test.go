package continuation_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider"
	"github.com/turnstream/turnstream/internal/provider/deepseek"
	"github.com/turnstream/turnstream/internal/provider/openaichat"
	"github.com/turnstream/turnstream/internal/provider/responses"
	"github.com/turnstream/turnstream/internal/provider/scripted"
)

func TestStrategyFor(t *testing.T) {
	tests := []struct {
		api  string
		want continuation.Entry
		mode string
	}{
		{responses.API.Name, continuation.Entry{Strategy: provider.ContinueDurableCursor, SupportsDurableCursor: true, DurableMode: responses.API.CursorMode}, responses.API.CursorMode},
		{openaichat.API.Name, continuation.Entry{Strategy: provider.ContinueReplay}, continuation.ModeReplay},
		{deepseek.API.Name, continuation.Entry{Strategy: provider.ContinueReplay}, continuation.ModeReplay},
		{scripted.API.Name, continuation.Entry{Strategy: provider.ContinueReplay}, continuation.ModeReplay},
		{"anthropic_messages", continuation.Entry{Strategy: provider.ContinueTurnLocal}, continuation.ModeStatelessLoop},
		{"unknown_api", continuation.Entry{Strategy: provider.ContinueReplay}, continuation.ModeReplay},
	}
	for _, tt := range tests {
		t.Run(tt.api, func(t *testing.T) {
			tt.want.API = tt.api
			got := continuation.StrategyFor(tt.api)
			if got != tt.want {
				t.Errorf("StrategyFor(%q) = %+v; want %+v", tt.api, got, tt.want)
			}
			if m := got.Mode(); m != tt.mode {
				t.Errorf("StrategyFor(%q).Mode() = %q; want %q", tt.api, m, tt.mode)
			}
		})
	}
}
