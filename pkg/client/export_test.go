package client

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Tuning changes the bounds of the Turns and Taps a test starts from now
// on, until it ends: live bounds the live records waiting for Next (0:
// unchanged), idle the wait before a tail check (0: unchanged), and drop,
// when set, drops the live records it returns true for, as a lost republish
// would be.
func Tuning(tb testing.TB, live int, idle time.Duration, drop func(*nats.Msg) bool) {
	tb.Helper()
	saved := defaultTuning
	tb.Cleanup(func() { defaultTuning = saved })
	if live > 0 {
		defaultTuning.liveRecords = live
	}
	if idle > 0 {
		defaultTuning.idle, defaultTuning.maxIdle = idle, idle
		defaultTuning.tapIdle, defaultTuning.maxTapIdle = idle, idle
	}
	defaultTuning.dropLive = drop
}
