// The soak's disorder: its schedule of faults (the gateway killed once,
// early; then a broker's connections reset, Redis killed and started
// again, a broker blackholed, a broker slow and narrow, a broker stopped
// and started again, in turn, every few minutes), the churn of clients
// (connections cut, clients closed and started again, at random all
// along), and the sampler of the gateway's gauges.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The kinds of fault.
const (
	faultKill      = "gateway killed (SIGKILL) and started again"
	faultReset     = "broker connections reset"
	faultRedis     = "Redis killed (SIGKILL), started again on the same port and data"
	faultBlackhole = "broker blackholed"
	faultSlow      = "broker slow and narrow (200 ms, 1 MiB/s)"
	faultDown      = "broker stopped (connections refused)"
)

// brokerKinds are the faults of the rounds, in their order: Redis's
// follows a reset (an instant), so that the time just before its outage,
// the reference of its error bound, is a quiet one.
var brokerKinds = []string{faultReset, faultRedis, faultBlackhole, faultSlow, faultDown}

// plannedFault is a fault of the schedule: its kind, when it starts (since
// the run's start), how long it lasts, the broker it hits.
type plannedFault struct {
	At, For time.Duration
	Kind    string
	Node    int32
}

// schedule plans the faults of a run of length d: the gateway killed at
// d/8 (after the warm-up, before the second quarter whose samples the
// flatness rule takes as its reference: both quarters are the second
// gateway's); then from d/4 to 7d/8 the other faults in turn, gap apart
// (at most 90 s: each kind every 7.5 min at most), each broker fault on the next broker; a blackhole, a
// broker stopped and Redis down last up to 30 s (under the minute of
// quota/counters' unreachable line: one line an outage), a slow broker up
// to a minute, at most half the gap.
func schedule(d time.Duration, kill bool) []plannedFault {
	var out []plannedFault
	if kill {
		out = append(out, plannedFault{At: max(20*time.Second, d/8), Kind: faultKill})
	}
	from, to := d/4, d*7/8
	n := len(brokerKinds)
	gap := min(90*time.Second, (to-from)/time.Duration(n))
	for k := 0; gap > 0; k++ {
		f := plannedFault{At: from + time.Duration(k)*gap, Kind: brokerKinds[k%n], Node: int32(k % 3)}
		switch f.Kind {
		case faultBlackhole, faultDown, faultRedis:
			f.For = min(30*time.Second, gap/2)
		case faultSlow:
			f.For = min(time.Minute, gap/2)
		}
		if f.At+f.For >= to {
			break
		}
		out = append(out, f)
	}
	return out
}

// chaos applies the schedule, then waits for the run's end.
func (sk *soak) chaos() error {
	plan := schedule(sk.s.duration, sk.s.killGateway)
	if sk.s.upgradeGateway {
		plan = withUpgrade(plan, sk.s.duration)
	}
	for _, f := range plan {
		if !sk.sleepUntil(f.At) {
			break
		}
		if err := sk.apply(f); err != nil {
			return err
		}
	}
	sk.sleepUntil(sk.s.duration)
	return nil
}

// sleepUntil sleeps until at since the start; false if at is past the
// run's end.
func (sk *soak) sleepUntil(at time.Duration) bool {
	if at > sk.s.duration {
		return false
	}
	time.Sleep(time.Until(sk.s.start.Add(at))) // the schedule's time, not a wait for a condition
	return true
}

// apply applies fault f and heals it after its length.
func (sk *soak) apply(f plannedFault) error {
	c := sk.cluster
	switch f.Kind {
	case faultUpgrade:
		sk.upgrade()
		return nil
	case faultKill:
		sk.mark(faultKill)
		sk.gateway().kill()
		if err := sk.startGateway(); err != nil {
			return err
		}
		sk.mark("second gateway healthy")
		return nil
	case faultReset:
		sk.mark(fmt.Sprintf("%s: broker %d", faultReset, f.Node))
		return c.Reset(f.Node)
	case faultRedis:
		return sk.redisOutage(f)
	case faultDown:
		sk.mark(fmt.Sprintf("%s: broker %d for %v", faultDown, f.Node, f.For.Round(time.Second)))
		c.Down(f.Node)
		time.Sleep(f.For) // the fault's length
		if err := c.Up(f.Node); err != nil {
			return err
		}
		sk.mark(fmt.Sprintf("broker %d listening again", f.Node))
		return nil
	case faultBlackhole:
		sk.mark(fmt.Sprintf("%s: broker %d for %v", faultBlackhole, f.Node, f.For.Round(time.Second)))
		if err := c.Blackhole(f.Node); err != nil {
			return err
		}
	case faultSlow:
		sk.mark(fmt.Sprintf("%s: broker %d for %v", faultSlow, f.Node, f.For.Round(time.Second)))
		if err := c.Latency(f.Node, 200*time.Millisecond); err != nil {
			return err
		}
		if err := c.Bandwidth(f.Node, 1024); err != nil {
			return err
		}
	}
	time.Sleep(f.For) // the fault's length
	c.Heal(f.Node)
	sk.mark(fmt.Sprintf("broker %d healed", f.Node))
	return nil
}

// churn cuts a client connection every cutEvery and closes and starts
// again a client chosen at random every restartEvery, until ctx ends.
func (sk *soak) churn(ctx context.Context, loops []loop) {
	cut := time.NewTicker(sk.s.cutEvery)
	defer cut.Stop()
	restart := time.NewTicker(sk.s.restartEvery)
	defer restart.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cut.C:
			if sk.conns.cutOne() {
				sk.b.mu.Lock()
				sk.b.cuts++
				sk.b.mu.Unlock()
			}
		case <-restart.C:
			loops[rand.IntN(len(loops))].ask()
		}
	}
}

// sampleLoop reads the gateway's gauges every sampleEvery until ctx ends
// (a read that fails, the gateway being restarted, is skipped).
func (sk *soak) sampleLoop(ctx context.Context) {
	tick := time.NewTicker(sk.s.sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		gw := sk.gateway()
		g, err := gw.gauges(sk.tenants())
		if err != nil {
			continue
		}
		g.At = time.Since(sk.s.start)
		g.Gateway = gw.gen
		sk.samplesMu.Lock()
		sk.samples = append(sk.samples, g)
		sk.samplesMu.Unlock()
	}
}
