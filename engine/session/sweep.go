package session

import (
	"time"

	"github.com/flexway/flexway/engine/signals"
)

// SweepEvery is the tick: held connections are retried at each tick, the
// deadlines (auth_timeout, idle_timeout — for an idle connection and for a
// request begun and not finished —, the write timeout) checked once a
// second. No timer per connection: an idle connection costs nothing.
// Below 10 ms so that no loop waits in epoll_wait that long (invariant 37):
// Go's sysmon takes back the P of a thread 10 ms in a system call even with
// a P idle, and the loop's return then wakes sysmon into 20 µs sleeps for a
// millisecond and more. At 20 ms an idle gateway made some 2,700 context
// switches a second (47 ms of CPU), at 8 ms 650 (21 ms). Once no loop has
// had traffic for QuietAfter the ticker rests instead (rest.go): an idle
// gateway some 90 switches a second (3 ms).
const SweepEvery = 8 * time.Millisecond

// sweep runs on loop l.
func (env *Env) sweep(l *Loop) {
	if len(l.held) > 0 {
		held := l.held
		l.held = nil
		for _, cl := range held {
			cl.wait.listed = false
			cl.resume()
		}
	}
	l.retryReading()
	now := time.Now()
	if len(l.draining) > 0 {
		keep := l.draining[:0]
		for _, u := range l.draining {
			if !u.closeIfFlushed(u.drainSince.age(now) > env.WriteTimeout) {
				keep = append(keep, u)
			}
		}
		l.draining = keep
	}
	if now.Sub(l.lastFull) < time.Second {
		return
	}
	l.lastFull = now
	snap := env.Snap.Load()
	lim := snap.Listener
	for cl := range l.clients {
		switch {
		case cl.auth.state != stAuthed:
			if cl.clock.opened.age(now) > lim.AuthTimeout.D() {
				cl.close(signals.CloseAuthTimeout)
			}
			continue
		case cl.auth.mech == mechCert && !cl.auth.sessEnd.IsZero() && !now.Before(cl.auth.sessEnd):
			// A certificate cannot re-authenticate: its connection is
			// closed at the session's end (S3).
			cl.close(signals.CloseCertSessionEnded, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "principal", cl.auth.ident.Principal)
			continue
		case !cl.clock.frameSince.IsZero() && !cl.waitsOnGateway() && cl.clock.frameSince.age(now) > lim.IdleTimeout.D():
			// A request begun and not finished within the idle bound: the
			// bytes keep coming (so the connection is not idle) but never
			// make a frame. Before authentication auth_timeout bounds it;
			// while the gateway makes the connection wait, its head frame
			// is whole and the clock restarts when it goes on.
			cl.close(signals.ClosePartialFrame, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "idle_timeout", lim.IdleTimeout.String(), "buffered_bytes", cl.inBuffered())
			continue
		case cl.queue.Len() == 0 && cl.c.Queued() == 0 && !cl.waitsOnGateway() && cl.clock.lastActive.age(now) > lim.IdleTimeout.D():
			// Not a client whose request waits on the gateway: it is not
			// read meanwhile (flow.go), so its activity does not show.
			cl.close(signals.CloseIdle)
			continue
		}
		// B3: a client that reads none of its answers for WriteTimeout is
		// closed. What it has not read is in its queue, or, after a pass
		// its socket had no room for (a Fetch's spliced records), in its
		// socket's send queue; it reads when its socket takes more.
		out := cl.c.Queued()
		if out == 0 && cl.c.Full() {
			out = cl.c.Unsent()
		}
		if out == 0 {
			cl.clock.outLast = 0
			continue
		}
		if took := cl.c.Took(); cl.clock.outLast == 0 || out < cl.clock.outLast || took != cl.clock.took {
			cl.clock.outSince = instantOf(now)
			cl.clock.took = took
		}
		cl.clock.outLast = out
		if cl.clock.outSince.age(now) >= env.WriteTimeout {
			// RST, not FIN: a peer that reads nothing would keep the socket
			// in FIN-WAIT-1 with its unsent bytes for minutes.
			cl.reset(signals.CloseWriteTimeout, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "unread_bytes", out, "after", env.WriteTimeout.String())
		}
	}
}
