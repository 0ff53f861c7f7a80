package engine

// Flow control on the reactor (issue 11.3): the read pause (pause.go)
// wired to the budgets and to what a client has not read.
//
//   - The broker is not read until the client reads: after a broker
//     connection's traffic, a client with more than flowHigh bytes unread
//     (what its socket did not take) has its broker connection paused
//     (whyDrain); the broker's next bytes wait in the kernel. It is resumed
//     once the client is below flowLow.
//   - A client whose head request waits on the gateway (its budget, its
//     broker connection's dial) is not read either (whyBudget, whyDial):
//     what it pipelines waits in the kernel, not in gnet's buffer.
//   - The client is not read until its broker takes: after a client's
//     traffic event, a broker connection with more than flowHigh bytes
//     the socket did not take (gnet's outbound buffer) has its client
//     paused (whyUpstream); what the client sends meanwhile waits in the
//     kernel, as it would before a slow broker without the gateway. It is
//     resumed once the broker is below flowLow: looked at after each of the
//     broker's traffic events (its answers come as it reads) and at each tick.
//   - The resume is prompt: a client's unread bytes are the engine's own
//     (outq, written straight to the socket), and a watcher (one goroutine
//     and one epoll set per loop, used only while a socket is full) tells
//     the loop when the socket takes more, in microseconds, not at a tick.
//
// Reasons add up: a connection is read again when the last reason is gone.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/engine/kernel"
	"github.com/panjf2000/gnet/v2"
)

// pauseWhy is a set of reasons a connection's reads are paused.
type pauseWhy uint8

const (
	whyBudget   pauseWhy = 1 << iota // client: its head request waits for the budgets
	whyDial                          // client: its head request waits for its broker connection
	whyDrain                         // broker: its client has not read flowHigh bytes
	whyQuota                         // client: a KIP-219 mute (quota)
	whySplice                        // broker: its socket is a splice session's (splice.go)
	whyBare                          // pauseRead/resume, the bare primitive (tests)
	whyUpstream                      // client: its broker connection has flowHigh bytes unsent
)

// The marks of "the broker is not read until the client reads": above
// flowHigh bytes unread by the client, its broker connection is paused;
// resumed at flowLow. One streaming connection holds at most flowHigh plus
// one read (the loop's read buffer) plus a unit not yet whole; the kernel's
// socket buffers (several MiB on each side) keep a fast consumer fed while
// the pause and the resume cross.
var (
	flowHigh atomic.Int64
	flowLow  atomic.Int64
	// flowPauses, flowPausedNs: the drain pauses and their time (tests)
	flowPauses   atomic.Int64
	flowPausedNs atomic.Int64
	// upPauses: the pauses of clients for their broker (tests)
	upPauses atomic.Int64
)

func init() {
	flowHigh.Store(1 << 20)
	flowLow.Store(256 << 10)
}

// holdReads pauses c's reads for why, on its loop; the reasons add up.
// It returns the stand-in the owner must keep as its handle.
func (e *Engine) holdReads(c gnet.Conn, why pauseWhy) *pausedConn {
	p := e.standIn(c)
	if p.why&why == 0 {
		p.why |= why
		p.pause()
	}
	return p
}

// releaseReads drops why; the connection is read again once no reason is left.
func (p *pausedConn) releaseReads(why pauseWhy) {
	if p.why&why == 0 {
		return
	}
	p.why &^= why
	if p.why == 0 {
		p.resumeNow()
	}
}

// holdReads pauses the client's reads for why (see pauseReads); false when
// it cannot be paused now (closed, in its TLS handshake).
func (cl *client) holdReads(why pauseWhy) bool {
	if cl.closed || cl.tlsHS != nil {
		return false
	}
	cl.setHandle(cl.e.holdReads(cl.c, why))
	return true
}

// releaseReads drops why from the client's pause reasons.
func (cl *client) releaseReads(why pauseWhy) {
	if p, ok := cl.c.(*pausedConn); ok && !cl.closed {
		p.releaseReads(why)
	}
}

// setHandle makes p every handle of the client (its TLS adapter's too).
func (cl *client) setHandle(p *pausedConn) {
	cl.c = p
	if cl.tls != nil {
		cl.tls.ad.gc = p
	}
}

// own makes the client's handle a stand-in before its first answer, so
// that what its socket does not take is the engine's (outq): counted,
// watched, and dropped at a write timeout. Not during a TLS handshake (a
// worker writes through the adapter then). A client without an engine (the
// write path's unit tests, coalesce_test.go) keeps its handle.
func (cl *client) own() {
	if _, ok := cl.c.(*pausedConn); ok || cl.closed || cl.tlsHS != nil || cl.e == nil {
		return
	}
	cl.setHandle(cl.e.standIn(cl.c))
}

// syncReads pauses the client's reads while its head request waits on
// the gateway and resumes them when it goes on (at the end of process).
func (cl *client) syncReads() {
	if cl.closed || cl.state != stAuthed {
		return
	}
	cl.syncWhy(whyBudget, cl.held)
	cl.syncWhy(whyDial, cl.upSt == upDialing)
}

func (cl *client) syncWhy(why pauseWhy, want bool) {
	p, _ := cl.c.(*pausedConn)
	switch {
	case want && (p == nil || p.why&why == 0):
		cl.holdReads(why)
	case !want && p != nil && p.why&why != 0:
		p.releaseReads(why)
	}
}

// flowCheck runs after a broker connection's traffic: if its client has
// more than flowHigh bytes unread, the broker is not read until it reads.
// At the end of the event, so the pause's stash is at most a unit not yet
// whole.
func (u *upstreamConn) flowCheck() {
	cl := u.cl
	if cl.closed || u.closed || u.c == nil || u.drainHeld || u.sp != nil {
		return
	}
	if int64(cl.c.OutboundBuffered()) > flowHigh.Load() {
		flowPauses.Add(1)
		u.flowSince = time.Now()
		u.drainHeld = true
		u.holdReads(whyDrain)
	}
}

// holdReads pauses the broker connection's reads for why: its socket, or
// under TLS the socket below the TLS stand-in (whose handle stays the
// connection's own).
func (u *upstreamConn) holdReads(why pauseWhy) {
	if u.sec != nil && u.sec.tls != nil {
		t := u.sec.tls
		p := u.cl.e.holdReads(t.Conn, why)
		t.Conn, t.lio.gc = p, p
		return
	}
	u.c = u.cl.e.holdReads(u.c, why)
}

// socket is the broker connection's socket handle: its own, or under TLS
// the one below the TLS stand-in (a *pausedConn once paused).
func (u *upstreamConn) socket() gnet.Conn {
	if u.sec != nil && u.sec.tls != nil {
		return u.sec.tls.Conn
	}
	return u.c
}

// flowResume resumes the broker connection once the client has read down
// to flowLow (from syncOut: after each write, each drain, each tick).
func (cl *client) flowResume(out int) {
	u := cl.up
	if u == nil || !u.drainHeld || int64(out) > flowLow.Load() {
		return
	}
	u.drainHeld = false
	flowPausedNs.Add(int64(time.Since(u.flowSince)))
	if p, ok := u.socket().(*pausedConn); ok && !u.closed {
		p.releaseReads(whyDrain)
	}
}

// socketDrained: the client's socket took bytes (the watcher, on the loop).
func (cl *client) socketDrained() {
	if cl.closed {
		return
	}
	cl.syncOut()
	if cl.held {
		cl.resume()
	}
}

// The drain watcher: one per loop (kernel.Watcher), started at its first
// use. The loop arms a socket when bytes of its stand-in wait for it; the
// watcher's goroutine hands what fired to the loop with one Execute per
// wake. The loop finds the stand-in by fd and checks the generation of the
// arming: a stale event (a closed or re-armed socket) is ignored.

type drainWatch struct {
	w     *kernel.Watcher
	armed map[int32]*pausedConn // on the loop only: by fd
}

// watcher returns the loop's watcher, started at its first use; nil if
// it could not be (the tick flushes then).
func (e *Engine) watcher(l *loop) *drainWatch {
	ps := &l.pauses
	if ps.dw != nil || ps.dwFailed {
		return ps.dw
	}
	kw, err := kernel.NewWatcher()
	if err != nil {
		ps.dwFailed = true
		return nil
	}
	w := &drainWatch{w: kw, armed: map[int32]*pausedConn{}}
	ps.dw = w
	go kw.Run(func(fired []kernel.Event) {
		_ = l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer e.recoverConn(nil, "drain")
			w.fire(fired)
			return nil
		}))
	})
	return w
}

// fire runs on the loop: each socket that can take more is written to.
func (w *drainWatch) fire(fired []kernel.Event) {
	for _, f := range fired {
		p := w.armed[f.Fd]
		if p == nil || p.wgen != f.Gen {
			continue
		}
		delete(w.armed, f.Fd)
		p.wfd = -1
		p.writable()
	}
}

// stop ends the watcher's goroutine (at the engine's stop), once.
func (w *drainWatch) stop() { w.w.Stop() }

// armDrain asks the loop's watcher to say when p's socket takes more. On
// the loop; without a watcher, the tick flushes.
func (p *pausedConn) armDrain() {
	fd, err := p.sockFd()
	if err != nil || p.st == rpResuming {
		return
	}
	w := p.e.watcher(p.lp)
	if w == nil {
		return
	}
	if p.wfd >= 0 && p.wfd != int32(fd) {
		delete(w.armed, p.wfd)
	}
	gen, err := w.w.Arm(fd)
	if err != nil {
		p.wfd = -1
		return // the tick flushes
	}
	if q := w.armed[int32(fd)]; q != nil && q != p {
		q.wfd = -1 // its fd was closed: stale
	}
	p.wfd, p.wgen = int32(fd), gen
	w.armed[int32(fd)] = p
}

// disarm forgets p's arming (its socket is closing or changing).
func (p *pausedConn) disarm() {
	if p.wfd < 0 {
		return
	}
	if w := p.lp.pauses.dw; w != nil && w.armed[p.wfd] == p {
		delete(w.armed, p.wfd)
	}
	p.wfd = -1
}

// writable: p's socket takes more. What waits is written; the owner is
// told (a client resumes its broker, its held request).
func (p *pausedConn) writable() {
	if p.st == rpClosed {
		return
	}
	p.flushOut()
	if p.st == rpClosed {
		return
	}
	if o, ok := p.ctx.(interface{ socketDrained() }); ok {
		o.socketDrained()
	}
}

// upstreamCheck runs after a client's traffic event, once its batches are
// flushed: if its broker connection holds more than flowHigh bytes the
// socket did not take, the client is not read until the broker takes them
// (whyUpstream). Without it gnet's outbound buffer grew to the client's
// max_in_flight_bytes whenever the broker read slower than the client
// wrote: up to 64 MiB per connection, allocated anew after each
// collection, where the bytes would have waited in the kernel.
func (cl *client) upstreamCheck() {
	u := cl.up
	if cl.closed || u == nil || u.closed || u.c == nil {
		return
	}
	if cl.upFull {
		if cl.upLight {
			// Read while lightly held: the kernel's mark was reached (or
			// the client's window closed). If the broker took everything
			// meanwhile (its answer or the tick, which resume, had not come
			// yet), the hold ends here; else held for real from now on.
			if cl.upstreamResume(); !cl.upFull {
				upLightEnds.Add(1)
				return
			}
			cl.upLight = false
			cl.setRcvLowat(1)
			cl.holdReads(whyUpstream)
		}
		return
	}
	out := int64(u.c.OutboundBuffered())
	eager := (out > 0 || cl.upNoRoom) && cl.splicesProduce()
	if out <= flowHigh.Load() && !eager {
		cl.upNoRoom = false
		return
	}
	cl.upEager = eager
	switch {
	case cl.lightHold():
		cl.upLight = true
	case !cl.holdReads(whyUpstream):
		return
	}
	upPauses.Add(1)
	cl.upFull = true
	if cl.lp.upFull == nil {
		cl.lp.upFull = map[*client]struct{}{}
	}
	cl.lp.upFull[cl] = struct{}{}
	if cl.upNoRoom && !cl.noRoom() {
		cl.upstreamResume() // the broker read meanwhile
	}
}

// noRoom reports whether the client is held for a full broker socket
// (roomOut) whose room is not back yet; once it is, the reason is dropped.
func (cl *client) noRoom() bool {
	if !cl.upNoRoom {
		return false
	}
	if !cl.roomBack() {
		return true
	}
	cl.upNoRoom = false
	return false
}

// roomBack reports whether the broker's socket takes spliceRoomMin bytes
// or more (or is gone). A client held for a full broker socket (roomOut)
// is looked at again after each of the broker's traffic events (its
// answers come as it reads, and free room) and at each tick, as one held
// for gnet's outbound buffer. Invariant 42.
func (cl *client) roomBack() bool {
	u := cl.up
	if cl.closed || u == nil || u.closed || u.c == nil {
		return true
	}
	fd := u.c.Fd()
	if fd < 0 {
		return true
	}
	r := kernel.Room(fd)
	return r < 0 || r >= spliceRoomMin
}

// splicesProduce: the client is inside a streamed Produce, or its last
// Produce was one, whose records are spliced once its broker's socket has
// nothing unsent (invariant 39). Its producer's pause then comes at the
// first byte unsent rather than at flowHigh, and ends once all are sent:
// what the client sends meanwhile waits in its socket to be spliced,
// rather than be read into the loop's buffer and copied through the broker
// connection's (invariant 40).
func (cl *client) splicesProduce() bool {
	u := cl.up
	return (cl.ps.s != nil || cl.ps.large) && produceSpliceMin.Load() > 0 && cl.tls == nil && (u.sec == nil || u.sec.tls == nil)
}

// upLowat: the light hold's mark, the bytes the client's socket may hold
// before epoll reports it readable again (the kernel caps it at half its
// largest receive buffer, and reports a socket whose window is closed).
const upLowat = 4 << 20

// lightHold is the producer's pause without a detach, when it may: the
// client's socket, attached to gnet and not paused for another reason,
// gets SO_RCVLOWAT at upLowat, so that gnet's epoll does not report it
// readable while its broker takes what it holds (one system call, and one
// to resume, where a detach and a re-enroll cost some fifteen). Should the
// client fill the kernel's mark first, gnet reads it and the next
// upstreamCheck holds it for real (pauseReads).
func (cl *client) lightHold() bool {
	if cl.tlsHS != nil || upLowatOff.Load() {
		return false
	}
	if p, ok := cl.c.(*pausedConn); ok && (p.st != rpAttached || p.why != 0 || p.live == nil) {
		return false
	}
	if !cl.setRcvLowat(upLowat) {
		return false
	}
	upLightHolds.Add(1)
	return true
}

// upLowatOff (tests): the producer's pause always detaches. upLightHolds:
// the light holds (tests).
var (
	upLowatOff   atomic.Bool
	upLightHolds atomic.Int64
	// upLightEnds: light holds read before their resume, ended for a
	// broker that had taken everything (tests, profiles)
	upLightEnds atomic.Int64
)

// setRcvLowat sets the client socket's SO_RCVLOWAT (1: the kernel's
// default, at which it reports what it holds at once).
func (cl *client) setRcvLowat(v int) bool {
	fd := cl.c.Fd()
	if fd < 0 {
		return false
	}
	return kernel.SetRcvLowat(fd, v) == nil
}

// upstreamResume reads the client again once its broker connection holds
// flowLow bytes or fewer unsent (or is gone): after each of the broker's
// traffic events, and at each tick.
func (cl *client) upstreamResume() {
	if !cl.upFull {
		return
	}
	low := flowLow.Load()
	if cl.upEager {
		low = 0
	}
	if u := cl.up; !cl.closed && u != nil && !u.closed && u.c != nil && int64(u.c.OutboundBuffered()) > low {
		return
	}
	if cl.noRoom() {
		return
	}
	if cl.upEager && !cl.closed && cl.inBuffered() == 0 {
		// What waits in the client's socket is spliced before gnet would
		// read it into the loop's buffer (spliceOn); held on if the
		// broker's socket is full again.
		cl.spliceOn()
		if u := cl.up; !cl.closed && u != nil && !u.closed && u.c != nil && u.c.OutboundBuffered() > 0 {
			return
		}
		if cl.noRoom() {
			return
		}
	}
	cl.upFull = false
	delete(cl.lp.upFull, cl)
	if cl.upLight {
		cl.upLight = false
		if !cl.closed { // (a closed client's fd may be another's by now)
			cl.setRcvLowat(1) // epoll reports what the socket holds at once
		}
		return
	}
	cl.releaseReads(whyUpstream)
}
