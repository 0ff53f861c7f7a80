// The soak's schedule of faults: a fault of each kind in the default run
// and in a short one, the gateway killed once before the second quarter,
// every broker fault over before the last eighth, several rounds in an
// hour.
package main

import (
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	for _, c := range []struct {
		d      time.Duration
		rounds int // broker faults of each kind, at least
	}{{3 * time.Minute, 1}, {10 * time.Minute, 1}, {time.Hour, 4}} {
		plan := schedule(c.d, true)
		kinds := map[string]int{}
		for _, f := range plan {
			kinds[f.Kind]++
			if f.Kind == faultKill && (f.At >= c.d/4 || f.At < 20*time.Second) {
				t.Errorf("%v: the gateway killed at %v: not between the warm-up and the second quarter", c.d, f.At)
			}
			if f.At+f.For >= c.d*7/8 {
				t.Errorf("%v: %s from %v for %v: not over before the last eighth", c.d, f.Kind, f.At, f.For)
			}
		}
		if kinds[faultKill] != 1 {
			t.Errorf("%v: the gateway killed %d times", c.d, kinds[faultKill])
		}
		for _, k := range []string{faultReset, faultBlackhole, faultSlow} {
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
