package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/configs"
)

// The drain (U4, seed 001: "l'arrêt draine : les requêtes en vol
// répondues, puis la connexion fermée"). Stop closes the listeners first
// (nothing new is accepted), then every connection is marked on its own
// loop:
//
//   - before authentication (and during it), nothing is owed: closed now;
//   - an open session takes only the requests it had sent whole when the
//     drain began (drain.left: the gateway read them); what it sends later
//     stays unread, never forwarded, and its client sends it again
//     elsewhere;
//   - it is closed as soon as nothing is owed to it: no answer in its
//     queue, no request waiting for the gateway (its dial, its budget, a
//     re-authentication), every byte written out to its socket.
//
// A consumer's long-poll Fetch in flight is a request like any other: its
// broker answers it (within the Fetch's own wait, itself within
// max_fetch_wait), the gateway relays the answer, then closes. This is a
// broker's controlled shutdown as a Kafka client knows it; the gateway
// never invents a Fetch answer (an empty full-fetch answer is taken by the
// Java client for an invalid session). A connection with nothing in flight
// is closed at the drain's first pass: an idle consumer does not hold the
// stop. The broker connections of clients that left (orphans, invariant 11)
// are waited for too. server.shutdown_timeout (or the caller's deadline)
// bounds it all; what is left then is closed, and the log says how much.
//
// A stop is a transient cause (signals.CloseCause.Transient): a connection that had
// no answer past the handshake yet is reset, not closed.

// drainEvery: how often the drain looks again at the connections.
const drainEvery = session.SweepEvery

// drain runs after the listeners are closed; it returns once nothing is
// owed, or at deadline (or ctx's end) with the connections left.
func (e *Engine) drain(ctx context.Context, deadline time.Time) (conns int64) {
	for {
		var c atomic.Int64
		if !e.onLoops(deadline, func(l *session.Loop) { c.Add(l.DrainPass()) }) {
			return max(c.Load(), 1)
		}
		if c.Load() == 0 {
			return 0
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return c.Load()
		}
		select {
		case <-ctx.Done(): // cut short (a second signal)
			return c.Load()
		case <-time.After(min(wait, drainEvery)):
		}
	}
}

// inFlight counts the requests waiting for a broker, on every loop.
func (e *Engine) inFlight() int64 {
	n := int64(0)
	for _, l := range e.env.Loops() {
		n += l.Pending()
	}
	return n
}

// onLoops runs fn on every loop and waits for them all, until deadline
// (false: a loop did not run it in time).
func (e *Engine) onLoops(deadline time.Time, fn func(*session.Loop)) bool {
	var wg sync.WaitGroup
	for _, l := range e.env.Loops() {
		l := l
		wg.Add(1)
		if err := l.Run("drain", func() {
			defer wg.Done()
			fn(l)
		}); err != nil {
			wg.Done() // the loop is gone: nothing of it to drain
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(max(time.Until(deadline), 0) + drainEvery)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// shutdownTimeout is the drain's bound when the caller gives none.
func (e *Engine) shutdownTimeout() time.Duration {
	if d := e.env.Snap.Load().File.Server.ShutdownTimeout.D(); d > 0 {
		return d
	}
	return configs.DefaultShutdownTimeout
}
