package engine

import (
	"context"
	"time"
)

// StuckLoop reports the loop whose tick is the oldest, if it last ran
// more than within ago: a loop stuck in a callback or a task (its tick,
// posted every SweepEvery, waits behind it). From any goroutine. Loops
// that served no connection yet hold no state of ours and are not
// looked at; nor are loops once the engine stops them.
func (e *Engine) StuckLoop(within time.Duration) (loop int, late time.Duration, stuck bool) {
	if e.life.loopsDone.Load() {
		return 0, 0, false
	}
	now := time.Now()
	for _, l := range e.env.Loops() {
		if d := now.Sub(l.Ticked()); d > within && d > late {
			loop, late, stuck = l.ID(), d, true
		}
	}
	return loop, late, stuck
}

// Watchdog feeds systemd's watchdog (P1): every half of every (its
// WatchdogSec) it calls ping (WATCHDOG=1), but only while every loop
// answered its tick within half of every. A loop stuck in a callback
// stops the pings, and systemd restarts the service once every passes;
// the first ping withheld is logged (Error) with the loop, and so is the
// first one sent again. It returns when ctx ends.
func (e *Engine) Watchdog(ctx context.Context, every time.Duration, ping func()) {
	half := every / 2
	if half <= 0 {
		return
	}
	e.env.BoundRest(half / 2) // a quiet loop's tick stays younger than half
	t := time.NewTicker(half)
	defer t.Stop()
	withheld := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		loop, late, stuck := e.StuckLoop(half)
		switch {
		case stuck && !withheld:
			withheld = true
			e.log.Error("flexway watchdog: a loop does not answer its tick, systemd is no longer told WATCHDOG=1",
				"loop", loop, "last_tick_ago", late.Round(time.Millisecond).String(), "watchdog", every.String())
		case !stuck && withheld:
			withheld = false
			e.log.Warn("flexway watchdog: every loop answers its tick again, WATCHDOG=1 resumed", "watchdog", every.String())
		}
		if !stuck {
			ping()
		}
	}
}
