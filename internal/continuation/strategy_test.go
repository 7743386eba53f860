package continuation_test

import (
	"testing"

	"github.com/turnstream/turnstream/internal/continuation"
	"github.com/turnstream/turnstream/internal/provider"
)

func TestStrategyFor(t *testing.T) {
	tests := []struct {
		api  string
		want continuation.Entry
		mode string
	}{
		{provider.APIResponses, continuation.Entry{Strategy: continuation.StrategyDurableCursor, SupportsDurableCursor: true, DurableMode: continuation.ModeResponses}, continuation.ModeResponses},
		{provider.APIOpenAIChat, continuation.Entry{Strategy: continuation.StrategyReplay}, continuation.ModeReplay},
		{provider.APIDeepSeekChat, continuation.Entry{Strategy: continuation.StrategyReplay}, continuation.ModeReplay},
		{provider.APIScripted, continuation.Entry{Strategy: continuation.StrategyReplay}, continuation.ModeReplay},
		{"anthropic_messages", continuation.Entry{Strategy: continuation.StrategyTurnLocal}, continuation.ModeStatelessLoop},
		{"unknown_api", continuation.Entry{Strategy: continuation.StrategyReplay}, continuation.ModeReplay},
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
