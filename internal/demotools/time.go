package demotools

import (
	"context"
	"time"
	_ "time/tzdata" // the demo must know every zone, even on hosts without zoneinfo

	"github.com/turnstream/turnstream/pkg/toolworker"
	"github.com/turnstream/turnstream/pkg/wire"
)

// maxZoneLen bounds the timezone argument; IANA names are far shorter.
const maxZoneLen = 64

// clock serves get_time from an injected time source.
type clock struct {
	now func() time.Time
}

// getTime answers with the current time in the "timezone" argument (default
// UTC) as RFC 3339, a space and the zone name.
func (c clock) getTime(_ context.Context, call wire.ToolCall) (toolworker.Result, error) {
	var args struct {
		Timezone string `json:"timezone"`
	}
	if err := decodeArgs(call, &args); err != nil {
		return failure("%v", err)
	}
	zone := args.Timezone
	if zone == "" {
		zone = "UTC"
	}
	if len(zone) > maxZoneLen {
		return failure("unknown time zone: longer than %d characters", maxZoneLen)
	}
	// "Local" is the host's zone, not an IANA name: reveal nothing about it.
	if zone == "Local" {
		return failure("unknown time zone %q", zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return failure("unknown time zone %q", zone)
	}
	return toolworker.Result{Content: c.now().In(loc).Format(time.RFC3339) + " " + loc.String()}, nil
}
