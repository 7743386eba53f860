package turn

import (
	"regexp"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/pkg/wire"
)

func TestNormalizeCallID(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	tests := []struct {
		name       string
		providerID string
		taken      []string
		keep       bool
	}{
		{"openai id kept", "call_abc123DEF456ghi789JKL012", nil, true},
		{"deepseek id kept", "call_00_abcdefghijklmnopqrstuvwx", nil, true},
		{"mistral id kept", "a1B2c3D4e", nil, true},
		{"empty replaced", "", nil, false},
		{"zero string kept", "0", nil, true},
		{"kimi id with colon replaced", "functions.add:0", nil, false},
		{"too long replaced", "call_0123456789012345678901234567890123456789", nil, false},
		{"taken replaced", "call_1", []string{"call_1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taken := map[string]bool{}
			for _, id := range tt.taken {
				taken[id] = true
			}
			got := NormalizeCallID(tt.providerID, "s1", "t1", 2, 3, taken)
			if tt.keep && got != tt.providerID {
				t.Errorf("NormalizeCallID(%q) = %q; want it kept", tt.providerID, got)
			}
			if !tt.keep && got == tt.providerID {
				t.Errorf("NormalizeCallID(%q) = %q; want a replacement", tt.providerID, got)
			}
			if !valid.MatchString(got) {
				t.Errorf("NormalizeCallID(%q) = %q; not a usable id", tt.providerID, got)
			}
			if !taken[got] {
				t.Errorf("NormalizeCallID(%q) did not mark %q taken", tt.providerID, got)
			}
			// Stable: the same position derives the same id again, so a
			// redelivered step normalizes identically.
			again := map[string]bool{}
			for _, id := range tt.taken {
				again[id] = true
			}
			if got2 := NormalizeCallID(tt.providerID, "s1", "t1", 2, 3, again); got2 != got {
				t.Errorf("NormalizeCallID is not stable: %q then %q", got, got2)
			}
		})
	}
	t.Run("distinct positions get distinct ids", func(t *testing.T) {
		taken := map[string]bool{}
		seen := map[string]bool{}
		for step := 1; step <= 5; step++ {
			for index := range 5 {
				id := NormalizeCallID("", "s1", "t1", step, index, taken)
				if seen[id] {
					t.Fatalf("NormalizeCallID(step %d, index %d) = %q again", step, index, id)
				}
				seen[id] = true
			}
		}
	})
}

func TestResolveBudgets(t *testing.T) {
	cfg := config.Budgets{
		BudgetValues: config.BudgetValues{MaxIterations: 8, MaxToolCalls: 16, MaxRepeatedToolFailures: 2, WallClock: config.Duration(2 * time.Minute)},
		Ceiling:      config.BudgetValues{MaxIterations: 20, MaxToolCalls: 40, MaxRepeatedToolFailures: 3, WallClock: config.Duration(10 * time.Minute)},
	}
	tests := []struct {
		name string
		req  *wire.Budgets
		want Budgets
	}{
		{"defaults", nil, Budgets{8, 16, 2, 2 * time.Minute}},
		{"lowered", &wire.Budgets{MaxIterations: 2, MaxToolCalls: 1, MaxRepeatedToolFailures: 1, WallClockMS: 1000}, Budgets{2, 1, 1, time.Second}},
		{"raised within ceiling", &wire.Budgets{MaxIterations: 12, WallClockMS: 300000}, Budgets{12, 16, 2, 5 * time.Minute}},
		{"capped at ceiling", &wire.Budgets{MaxIterations: 99, MaxToolCalls: 99, MaxRepeatedToolFailures: 99, WallClockMS: 3600000}, Budgets{20, 40, 3, 10 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Resolve(cfg, tt.req); got != tt.want {
				t.Errorf("Resolve(%+v) = %+v; want %+v", tt.req, got, tt.want)
			}
		})
	}
}
