// Package benchtest holds what the per-chunk benchmarks of several
// packages share.
package benchtest

import (
	"runtime"
	"testing"
)

// LoopPerChunk runs op under b.Loop with allocations reported, and adds
// allocs/chunk and B/chunk for an op that handles chunks chunks. The
// counts are the process's (runtime.MemStats), as -benchmem's are.
func LoopPerChunk(b *testing.B, chunks int, op func()) {
	b.Helper()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(chunks)
	b.ReportMetric(float64(chunks), "chunks/op")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/chunk")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/chunk")
}
