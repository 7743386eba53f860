package turn

import (
	"time"

	"github.com/turnstream/turnstream/internal/config"
	"github.com/turnstream/turnstream/pkg/wire"
)

// Budget names, as carried by budget.exceeded events (wire.Budget).
const (
	BudgetIterations       = string(wire.BudgetMaxIterations)
	BudgetToolCalls        = string(wire.BudgetMaxToolCalls)
	BudgetRepeatedFailures = string(wire.BudgetMaxRepeatedToolFailures)
	BudgetWallClock        = string(wire.BudgetWallClock)
)

// Budgets are one turn's effective limits.
type Budgets struct {
	MaxIterations           int
	MaxToolCalls            int
	MaxRepeatedToolFailures int
	WallClock               time.Duration
}

// Resolve combines the worker's defaults and ceiling with a request's
// budgets: a request may ask for any value up to the ceiling; what it does
// not set takes the default.
func Resolve(cfg config.Budgets, req *wire.Budgets) Budgets {
	b := Budgets{
		MaxIterations:           cfg.MaxIterations,
		MaxToolCalls:            cfg.MaxToolCalls,
		MaxRepeatedToolFailures: cfg.MaxRepeatedToolFailures,
		WallClock:               cfg.WallClock.D(),
	}
	if req == nil {
		return b
	}
	pick := func(def, asked, ceiling int) int {
		if asked <= 0 {
			return def
		}
		return min(asked, ceiling)
	}
	b.MaxIterations = pick(b.MaxIterations, req.MaxIterations, cfg.Ceiling.MaxIterations)
	b.MaxToolCalls = pick(b.MaxToolCalls, req.MaxToolCalls, cfg.Ceiling.MaxToolCalls)
	b.MaxRepeatedToolFailures = pick(b.MaxRepeatedToolFailures, req.MaxRepeatedToolFailures, cfg.Ceiling.MaxRepeatedToolFailures)
	if req.WallClockMS > 0 {
		b.WallClock = min(time.Duration(req.WallClockMS)*time.Millisecond, cfg.Ceiling.WallClock.D())
	}
	return b
}
