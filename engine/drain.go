package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/panjf2000/gnet/v2"
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
const drainEvery = sweepEvery

// drain runs after the listeners are closed; it returns once nothing is
// owed, or at deadline (or ctx's end) with the connections left.
func (e *Engine) drain(ctx context.Context, deadline time.Time) (conns int64) {
	for {
		var c atomic.Int64
		if !e.onLoops(deadline, func(l *loop) { c.Add(e.drainPass(l)) }) {
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
	e.loopsMu.Lock()
	defer e.loopsMu.Unlock()
	n := int64(0)
	for _, l := range e.loops {
		n += l.pending.Load()
	}
	return n
}

// onLoops runs fn on every loop and waits for them all, until deadline
// (false: a loop did not run it in time).
func (e *Engine) onLoops(deadline time.Time, fn func(*loop)) bool {
	e.loopsMu.Lock()
	loops := make([]*loop, 0, len(e.loops))
	for _, l := range e.loops {
		loops = append(loops, l)
	}
	e.loopsMu.Unlock()
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		err := l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer wg.Done()
			defer l.fc.Settle()
			defer e.recoverConn(nil, "drain")
			fn(l)
			return nil
		}))
		if err != nil {
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

// drainPass runs on loop l: it marks the connections opened since the last
// pass, closes those owed nothing, and counts the others.
func (e *Engine) drainPass(l *loop) (conns int64) {
	for cl := range l.clients {
		if cl.closed {
			continue
		}
		if cl.auth.state != stAuthed {
			cl.close(signals.CloseDrained)
			continue
		}
		if !cl.drain.on {
			cl.drain.on = true
			cl.drain.left = cl.wholeFramesBuffered()
			cl.process() // a frame already whole and not yet taken
		}
		if cl.closed {
			continue
		}
		if cl.drained() {
			cl.close(signals.CloseDrained)
			continue
		}
		conns++
	}
	// Orphans (a client that left with requests unflushed): the sweep
	// closes each once flushed.
	for _, u := range l.draining {
		if !u.closed {
			conns++
		}
	}
	return conns
}

// drained: nothing is owed to a draining connection any more.
func (cl *client) drained() bool {
	if cl.queue.Len() > 0 || cl.waitsOnGateway() {
		return false
	}
	if cl.drain.left >= codec.SizeLen {
		cl.process() // a frame the gateway read and has not taken
		if cl.closed || cl.queue.Len() > 0 || cl.waitsOnGateway() {
			return false
		}
	}
	return cl.c.Queued() == 0
}

// wholeFramesBuffered is the size of the whole frames at the head of the
// connection's input: the requests it sent before the drain began.
func (cl *client) wholeFramesBuffered() int {
	n := cl.inBuffered()
	if n < codec.SizeLen {
		return 0
	}
	b, err := cl.peek(n)
	if err != nil {
		return 0
	}
	off := 0
	for off+codec.SizeLen <= n {
		size := codec.FrameSize(b[off:])
		if size < 0 || off+codec.SizeLen+int(size) > n {
			break
		}
		off += codec.SizeLen + int(size)
	}
	return off
}

// shutdownTimeout is the drain's bound when the caller gives none.
func (e *Engine) shutdownTimeout() time.Duration {
	if d := e.snap.Load().File.Server.ShutdownTimeout.D(); d > 0 {
		return d
	}
	return configs.DefaultShutdownTimeout
}
