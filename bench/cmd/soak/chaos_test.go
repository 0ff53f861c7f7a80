// The soak's schedule of faults: a fault of each kind in a run of 3
// minutes or more, the gateway killed once before the second quarter,
// every other fault over before the last eighth and before the next one
// starts, Redis's outage under the minute of its unreachable line and its
// reference time (as long, just before it) free of other faults, several
// rounds in an hour.
package main

import (
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	for _, c := range []struct {
		d      time.Duration
		rounds int // faults of each kind but the kill, at least
	}{{3 * time.Minute, 1}, {5 * time.Minute, 1}, {10 * time.Minute, 1}, {time.Hour, 4}} {
		plan := schedule(c.d, true)
		kinds := map[string]int{}
		for i, f := range plan {
			kinds[f.Kind]++
			if f.Kind == faultKill && (f.At >= c.d/4 || f.At < 20*time.Second) {
				t.Errorf("%v: the gateway killed at %v: not between the warm-up and the second quarter", c.d, f.At)
			}
			if f.At+f.For >= c.d*7/8 {
				t.Errorf("%v: %s from %v for %v: not over before the last eighth", c.d, f.Kind, f.At, f.For)
			}
			// Redis's outage: 2 s of reads, the outage, the gateway's line
			// (a sync or two) before the next fault.
			if i+1 < len(plan) && f.At+f.For+5*time.Second > plan[i+1].At {
				t.Errorf("%v: %s from %v for %v overlaps the next fault at %v", c.d, f.Kind, f.At, f.For, plan[i+1].At)
			}
			if f.Kind == faultRedis {
				if f.For >= time.Minute || f.For < 10*time.Second {
					t.Errorf("%v: Redis down for %v: want 10 s to under a minute (one unreachable line)", c.d, f.For)
				}
				if prev := plan[i-1]; prev.At+prev.For > f.At-f.For {
					t.Errorf("%v: Redis at %v: the time before it (%v) holds %s", c.d, f.At, f.For, prev.Kind)
				}
			}
		}
		if kinds[faultKill] != 1 {
			t.Errorf("%v: the gateway killed %d times", c.d, kinds[faultKill])
		}
		for _, k := range []string{faultReset, faultRedis, faultBlackhole, faultSlow, faultDown} {
			if kinds[k] < c.rounds {
				t.Errorf("%v: %q %d times, want at least %d: %+v", c.d, k, kinds[k], c.rounds, plan)
			}
		}
	}
	for _, f := range schedule(10*time.Minute, false) {
		if f.Kind == faultKill {
			t.Fatal("-kill=false: the gateway killed still")
		}
	}
}
