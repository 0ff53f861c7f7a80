package engine

import "testing"

// Invariant 37: the loops leave one P idle, so that Go's sysmon does not
// take a waiting loop's P back at every wait (issue 11.4: the Java
// producer's round trips cost 1.9 CPU s/GiB with one loop on two cores,
// 2.3–2.9 with two; BENCHMARKS.md).
func TestDefaultLoopsLeaveOnePIdle(t *testing.T) {
	for _, c := range []struct{ procs, loops int }{{1, 1}, {2, 1}, {3, 2}, {8, 7}, {64, 63}} {
		if got := defaultLoops(c.procs); got != c.loops {
			t.Errorf("GOMAXPROCS %d: %d loops, want %d", c.procs, got, c.loops)
		}
	}
}
