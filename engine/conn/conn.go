package conn

import (
	"context"
	"errors"
	"net"

	"github.com/flexway/flexway/engine/kernel"
	"github.com/panjf2000/gnet/v2"
)

// Reason is why a Conn's reads are paused; reasons add up, and a Conn is
// read again when the last one is dropped.
type Reason uint8

const (
	Budget   Reason = 1 << iota // its head request waits for the budgets (a client)
	Dial                        // its head request waits for its broker connection (a client)
	Quota                       // a KIP-219 mute (a client)
	PeerFull                    // the other side of its pair has more than its high mark unsent
	Held                        // the bare pause: an owner's own (tests)
	Inbound                     // what it sent and the gateway has not handled reached a budget (a client)
)

// Owner is what a Conn tells: its owner's side of the mechanism. Every
// call runs on the Conn's loop.
type Owner interface {
	Traffic()         // bytes to read (Buffered, Peek, Discard)
	Closed(err error) // the socket ended: once
	Above()           // the write queue passed its high mark (or the socket has no room)
	Below()           // the write queue fell back to its low mark
	Drained()         // the socket took queued bytes (the watcher, or the tick)
}

type state uint8

const (
	attached state = iota // read by gnet
	detached              // paused: the socket is the Conn's, in no epoll set
	resuming              // handed to gnet's Enroll; Reattached ends it
	closed
)

var errReenroll = errors.New("conn: re-enroll failed")

// Conn is one socket's handle, on its loop only (AsyncWrite excepted).
type Conn struct {
	l     *Loop
	owner Owner
	live  gnet.Conn // gnet's connection while attached
	fd    int       // the socket while detached or re-enrolling, -1 otherwise

	rd stash // read before gnet's buffer (io.go, readon.go)

	q         kernel.Queue // written, not taken by the socket yet
	high, low int

	wfd, wgen int32 // the watcher's arming: fd (-1 none) and generation

	st  state
	why Reason

	above    bool // passed high, not back to low yet
	full     bool // a pass found no room in the socket (NoRoom): above until it takes more
	settling bool // in the loop's settle list: a pause to apply
	tracked  bool // in the loop's tracked set: the tick looks at it
	hup      bool // the peer closed while detached: read until its close shows
	notified bool // the owner was told of the end

	took uint32 // times the socket took bytes or had room again (Took)
}

// Open makes the handle of a connection gnet opened (OnOpen), on loop l:
// it becomes the connection's context. high and low are its write queue's
// marks.
func Open(l *Loop, gc gnet.Conn, o Owner, high, low int) *Conn {
	c := &Conn{l: l, owner: o, live: gc, fd: -1, wfd: -1, high: high, low: low}
	gc.SetContext(c)
	return c
}

// Owner returns the Conn's owner.
func (c *Conn) Owner() Owner { return c.owner }

// Loop returns the Conn's loop.
func (c *Conn) Loop() *Loop { return c.l }

// EventLoop returns gnet's loop of the Conn: the one gnet serves it on
// while attached, its Loop's otherwise.
func (c *Conn) EventLoop() gnet.EventLoop {
	if c.live != nil {
		return c.live.EventLoop()
	}
	return c.l.el
}

// LocalAddr and RemoteAddr are the socket's: gnet's while attached, read
// from the socket while not (a Conn keeps no copy: an idle pair's bytes,
// invariant 56); nil while re-enrolling and once closed.
func (c *Conn) LocalAddr() net.Addr {
	if c.live != nil {
		return c.live.LocalAddr()
	}
	if c.fd < 0 {
		return nil
	}
	return kernel.LocalAddr(c.fd)
}

func (c *Conn) RemoteAddr() net.Addr {
	if c.live != nil {
		return c.live.RemoteAddr()
	}
	if c.fd < 0 {
		return nil
	}
	return kernel.PeerAddr(c.fd)
}

// Closed reports whether the socket ended.
func (c *Conn) Closed() bool { return c.st == closed }

// Attached reports whether gnet reads the socket now.
func (c *Conn) Attached() bool { return c.st == attached && c.live != nil }

// State names the socket's state: attached, detached, resuming or closed.
func (c *Conn) State() string {
	return [...]string{"attached", "detached", "resuming", "closed"}[c.st]
}

// Detached reports whether the socket is the Conn's, out of gnet (not
// re-enrolling): its fd may be read by the owner itself.
func (c *Conn) Detached() bool { return c.st == detached && c.fd >= 0 }

// Paused reports whether the socket is detached: its bytes wait in the kernel.
func (c *Conn) Paused() bool { return c.st == detached || c.st == resuming }

// PausedFor reports whether r is one of the Conn's reasons.
func (c *Conn) PausedFor(r Reason) bool { return c.why&r != 0 }

// Fd is the socket's descriptor: gnet's while attached, the Conn's while
// detached or re-enrolling; -1 once closed.
func (c *Conn) Fd() int {
	if c.live != nil && c.st != closed {
		return c.live.Fd()
	}
	return c.fd
}

// Pause adds r to the Conn's reasons; the socket is detached at the loop's
// next safe point (Loop.Settle), so that what the caller peeked stays valid
// until its callback ends.
func (c *Conn) Pause(r Reason) {
	if c.why&r != 0 || c.st == closed {
		c.why |= r
		return
	}
	c.why |= r
	if c.st == attached {
		c.l.toSettle(c)
	}
}

// Resume drops r; with no reason left the socket is read again (enrolled
// again, its stash read first).
func (c *Conn) Resume(r Reason) {
	if c.why&r == 0 {
		return
	}
	c.why &^= r
	if c.why == 0 && c.st == detached {
		c.reenroll()
	}
}

// detach takes the socket from gnet: a dup keeps it open, gnet's close
// takes it out of gnet's epoll. False when it cannot now (no fd left to
// dup): the loop tries again at its tick.
func (c *Conn) detach() bool {
	gc := c.live
	fd, err := gc.Dup()
	if err != nil {
		return false
	}
	if n := gc.InboundBuffered(); n > 0 {
		b, err := gc.Peek(n)
		if err != nil {
			_ = kernel.Close(fd)
			return false
		}
		c.stash(b)
	}
	c.live, c.fd, c.st = nil, fd, detached
	c.disarm()
	c.l.track(c)
	c.l.stats.Detaches.Inc()
	// Synchronous: OnClose(gc) runs now and finds gc is not c.live — a
	// detach, nothing ends; gnet then takes the fd out of its epoll and
	// closes it.
	_ = c.l.el.Close(gc)
	if c.q.Len() > 0 || c.full {
		c.arm() // the same socket, by its new fd
	}
	return true
}

// reenroll hands the detached socket to gnet again, on the same loop; a
// failed enrollment is reported to the loop from a goroutine of its own
// (the result comes only once the loop ran OnOpen).
func (c *Conn) reenroll() {
	c.disarm()
	fd := c.fd
	c.fd = -1
	nc, err := kernel.Adopt(fd, func(fd int) {
		if rest := readRest(fd); len(rest) > 0 {
			c.stash(rest)
		}
	})
	if err != nil {
		c.closeDetached(err, false)
		return
	}
	c.st = resuming
	ch, err := c.l.el.Enroll(gnet.NewContext(context.Background(), c), nc)
	if err != nil {
		_ = nc.Close()
		c.closeDetached(err, false)
		return
	}
	go func() {
		r := <-ch
		if r.Err == nil && r.Conn != nil {
			return
		}
		err := r.Err
		if err == nil {
			err = errReenroll
		}
		_ = c.l.run("enroll", c, func() {
			if c.st == resuming {
				c.closeDetached(err, true)
			}
		})
	}()
}

// readRest is what a peer that reset its socket sent before the reset:
// stashed, its owner told of the close can still take its last requests
// (invariant 11). Bounded by the socket's receive buffer; read whole
// first, so that it is stashed once (a stash never grows in place).
func readRest(fd int) []byte {
	var rest []byte
	var b [16 << 10]byte
	for {
		n, err := kernel.Read(fd, b[:])
		if n <= 0 || err != nil {
			return rest
		}
		rest = append(rest, b[:n]...)
	}
}

// Reattached is OnOpen of the re-enrolled socket gc (its context is c).
func (c *Conn) Reattached(gc gnet.Conn) gnet.Action {
	if c.st != resuming { // closed while re-enrolling: OnClose(gc) finds gc is not c.live
		return gnet.Close
	}
	c.live, c.st, c.rd.kept = gc, attached, 0
	c.l.stats.Resumes.Inc()
	if c.full {
		c.arm() // the socket without room, by its new fd: the watcher says when it has some
	}
	if c.q.Len() > 0 { // written while detached or re-enrolling: first
		n, err := c.q.WriteTo(gc.Fd())
		if err != nil {
			return gnet.Close // OnClose(gc) tells the owner
		}
		if n > 0 {
			c.took++
		}
		if c.q.Len() > 0 {
			c.arm()
		}
		c.marks() // back to low: the owner is told here, no writable event follows
		if n > 0 {
			// Nor is it told the socket took bytes (its unread bytes,
			// counted in its budgets, B2, would stay as they were): told
			// after OnOpen, as the tick's writable would.
			_ = c.l.run("drained", c, func() {
				if c.st == attached || c.st == detached {
					c.owner.Drained()
				}
			})
		}
	}
	if len(c.rd.in) > 0 {
		_ = gc.Wake(nil) // the owner reads its stash even if the peer sends nothing more
	}
	if c.why != 0 && !c.hup {
		// Paused again while re-enrolling: after OnOpen (gnet registers
		// the socket once it returns), and only if a reason still holds.
		_ = c.l.run("pause", c, func() {
			if c.st == attached && c.why != 0 && !c.hup {
				c.l.toSettle(c)
				c.l.Settle()
			}
		})
	}
	return gnet.None
}

// Traffic is OnTraffic of the Conn's socket: its owner reads.
func (c *Conn) Traffic() { c.traffic() }

// GnetClosed is OnClose of a gnet connection whose context is c: the owner
// is told if gc is the Conn's connection of the moment; a detach, or a
// socket re-enrolled after c was closed, ends nothing. While it is told,
// what it left unread (the stash, gnet's buffer: gnet releases it after
// OnClose) can still be peeked: a client's last requests (invariant 11).
func (c *Conn) GnetClosed(gc gnet.Conn, err error) {
	if c.live == nil || c.live != gc {
		return
	}
	c.st = closed
	c.q.Reset()
	c.disarm()
	c.notify(err)
	c.live = nil
}

// closeDetached ends a detached socket: closed once, the owner told as gnet
// would (at once for a failed write, as gnet does inside Write; later, on
// the loop, for Close).
func (c *Conn) closeDetached(err error, now bool) {
	c.disarm()
	if c.fd >= 0 {
		_, _ = c.q.WriteTo(c.fd) // best effort, as gnet's close
		_ = kernel.Close(c.fd)
		c.fd = -1
	}
	c.q.Reset()
	c.st = closed
	if now {
		c.notify(err)
		return
	}
	// If the loop no longer runs, the loop's Stop tells the owner.
	_ = c.l.run("close", c, func() { c.notify(err) })
}

func (c *Conn) notify(err error) {
	if c.notified {
		return
	}
	c.notified = true
	c.l.untrack(c)
	c.owner.Closed(err)
	c.rd.unpool(c.l) // what the owner left, peekable until now (invariant 11)
	c.rd.in = nil
}

// Close closes the connection; the owner's Closed follows later on the
// loop, as with gnet's Close. What the socket takes now is written (best
// effort); the rest is dropped.
func (c *Conn) Close() {
	switch c.st {
	case attached:
		_, _ = c.q.WriteTo(c.live.Fd())
		c.q.Reset()
		c.disarm()
		_ = c.live.Close()
	case detached, resuming:
		c.closeDetached(nil, false)
	}
}

// AsyncWrite writes b from any goroutine (a TLS handshake's worker): on
// the loop, in order with the loop's own writes. b is not copied.
func (c *Conn) AsyncWrite(b []byte) error {
	return c.l.run("write", c, func() { _ = c.Write(b) })
}
