package engine

// The read pause (issue 11.2). gnet has no call to stop reading a
// connection: the pause detaches the socket from gnet and re-attaches it.
//
//   - pause: once gnet has flushed what the owner wrote (until then the
//     detach waits, checked at each tick), dup the socket, copy the bytes
//     gnet read and the owner did not consume (the stash), and close the
//     gnet connection on its loop. gnet's close is close(2), never
//     shutdown(2): the dup keeps the socket open and out of every epoll set,
//     so the kernel's receive buffer fills, the window closes and the peer's
//     writes block. Nothing is read, nothing is held but the stash.
//   - resume: the fd becomes a net.Conn again and is enrolled on the same
//     loop (EventLoop.Enroll: invariant 1, a pair lives on one loop); the
//     stash is delivered before anything the socket brings.
//
// The owner's handle becomes a *pausedConn at its first pause and stays one:
// a gnet.Conn of its own that routes every call to the connection of the
// moment (gnet's while attached, the socket while detached), so no handle
// anywhere goes stale, and writes never stop: they go straight to the
// socket, what the kernel does not take waits in the stand-in's queue for
// the drain watcher (flow.go). A broker connection never paused keeps
// gnet's own handle; a client's is a stand-in from its first answer on
// (client.own), so that its unsent bytes are the engine's.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/flexway/flexway/engine/kernel"
	"github.com/panjf2000/gnet/v2"
	gerrors "github.com/panjf2000/gnet/v2/pkg/errors"
	"golang.org/x/sys/unix"
)

type pauseState uint8

const (
	rpAttached      pauseState = iota // read by gnet (never paused, or resumed)
	rpDetachPending                   // pause asked; gnet still flushes what the owner wrote
	rpPaused                          // detached: the socket is ours, in no epoll set
	rpResuming                        // handed to Enroll; OnOpen re-attaches
	rpClosed
)

var errPeerGone = errors.New("pause: the peer reset the connection while paused")

// pausedConn stands in for a connection that was paused at least once: the
// owner's handle from its first pause on, and the context of every gnet
// connection it is attached to. All its methods run on its loop, except
// AsyncWrite, AsyncWritev and Wake, which may be called from anywhere.
type pausedConn struct {
	e   *Engine
	lp  *loop
	el  gnet.EventLoop
	ctx any // the owner (*client, *upstreamConn): what Context returns
	st  pauseState

	live gnet.Conn // gnet's connection while attached (or detach pending)
	fd   int       // the socket while paused, -1 otherwise

	in  []byte // read by gnet, not consumed by the owner: delivered first
	off int
	// q: written, not taken by the socket yet (flow_out.go): the stand-in
	// writes straight to its socket, attached or not, once gnet's own
	// outbound buffer is empty; the watcher (flow.go) says when to go on.
	q kernel.Queue

	why  pauseWhy // the reasons of the pause (flow.go); 0 for pauseRead's own
	wfd  int32    // the fd armed in the loop's drain watcher, -1 none
	wgen int32

	// sp: a splice session (splice.go) this connection is a side of: the
	// client's writes wait in q meanwhile, the broker's socket is the session's.
	sp *spliceRun

	local, remote net.Addr
	one           [1][]byte // Write's vector
	oneBusy       bool
	again         bool // paused again while re-enrolling
	notified      bool // the owner was told of the close (exactly once)
}

var _ gnet.Conn = (*pausedConn)(nil)

// pauseRead stops reading c, on c's loop. c is the owner's handle: gnet's
// connection the first time, the stand-in an earlier pauseRead returned
// ever after. The owner replaces its handle with the result and keeps it
// (the TLS adapter's too: it reads through its own copy). If the owner wrote
// bytes gnet has not sent yet, the detach waits until they are sent (at a
// tick, 20 ms); gnet keeps reading meanwhile (paused reports false).
// Call it between frames: slices peeked from gnet's buffer are not valid
// after it. The owner must not pause a connection it has closed.
//
// pauseRead and resume are one reason among others (whyBare, flow.go):
// a connection they resume stays paused while another reason holds it.
func (e *Engine) pauseRead(c gnet.Conn) *pausedConn {
	p := e.standIn(c)
	p.why |= whyBare
	p.pause()
	return p
}

// standIn returns c's stand-in, made now if c is gnet's own handle (the
// owner stores it as its handle). On c's loop.
func (e *Engine) standIn(c gnet.Conn) *pausedConn {
	p, ok := c.(*pausedConn)
	if !ok {
		p = &pausedConn{e: e, el: c.EventLoop(), ctx: c.Context(), live: c, fd: -1, wfd: -1,
			local: c.LocalAddr(), remote: c.RemoteAddr()}
		p.lp = e.loopOf(p.el)
		c.SetContext(p)
	}
	return p
}

// pauseReads pauses a client's reads (pauseRead) and makes every handle
// of it the stand-in, its TLS adapter's included. On its loop; nil when it
// cannot be paused now: closed, or in its TLS handshake (a worker writes
// through the adapter then).
func (cl *client) pauseReads() *pausedConn {
	if cl.closed || cl.tlsHS != nil {
		return nil
	}
	p := cl.e.pauseRead(cl.c)
	cl.c = p
	if cl.tls != nil {
		cl.tls.ad.gc = p
	}
	return p
}

// pauseReads pauses a broker connection's reads; nil when it is not open.
func (u *upstreamConn) pauseReads() *pausedConn {
	if u.closed || u.c == nil {
		return nil
	}
	if u.sec != nil && u.sec.tls != nil {
		return u.pauseReadsTLS() // the socket under the TLS stand-in
	}
	p := u.cl.e.pauseRead(u.c)
	u.c = p
	return p
}

// paused reports whether the connection is detached: its bytes wait in
// the kernel.
func (p *pausedConn) paused() bool { return p.st == rpPaused || p.st == rpResuming }

func (p *pausedConn) pause() {
	switch p.st {
	case rpAttached:
		p.st = rpDetachPending
		p.track()
		if p.live.OutboundBuffered() == 0 {
			p.detach()
		}
	case rpResuming:
		p.again = true
	}
}

// resume drops pauseRead's reason (on its loop); with no other reason
// left, the connection is read again (resumeNow).
func (p *pausedConn) resume() {
	p.why &^= whyBare
	if p.why == 0 {
		p.resumeNow()
	}
}

// resumeNow reads the connection again, whatever the reasons: a pause not
// yet done is cancelled; a detached socket is enrolled on its loop again,
// and its stash is the first thing the owner reads (an OnTraffic is
// raised for it). The peer's close while paused resumes so.
func (p *pausedConn) resumeNow() {
	switch p.st {
	case rpDetachPending:
		p.st = rpAttached
		p.untrack()
	case rpPaused:
		p.reenroll()
	case rpResuming:
		p.again = false
	}
}

// detach takes the socket from gnet, or leaves the pause pending (retried
// at the next tick) when it cannot (no fd left to dup).
func (p *pausedConn) detach() {
	c := p.live
	fd, err := c.Dup()
	if err != nil {
		return
	}
	if n := c.InboundBuffered(); n > 0 {
		b, err := c.Peek(n)
		if err != nil {
			_ = unix.Close(fd)
			return
		}
		// Never in place: slices the owner took of the stash stay as they were.
		p.in = append(p.in[p.off:len(p.in):len(p.in)], b...)
		p.off = 0
	}
	p.live, p.fd, p.st = nil, fd, rpPaused
	p.disarm()
	// Synchronous: OnClose(c) runs now and finds c is not p.live — a detach,
	// nothing ends; gnet then deletes the fd from its epoll and closes it.
	_ = p.el.Close(c)
	if p.q.Len() > 0 {
		p.armDrain() // the same socket, by its new fd
	}
}

func (p *pausedConn) reenroll() {
	p.disarm()
	f := os.NewFile(uintptr(p.fd), "")
	p.fd = -1
	nc, err := net.FileConn(f) // its own dup
	_ = f.Close()
	if err == nil && nc.RemoteAddr() == nil { // getpeername failed: reset
		_ = nc.Close()
		err = errPeerGone
	}
	if err != nil {
		p.closeAs(err, false)
		return
	}
	p.st = rpResuming
	ch, err := p.el.Enroll(gnet.NewContext(context.Background(), p), nc)
	if err != nil {
		_ = nc.Close()
		p.closeAs(err, false)
		return
	}
	go p.watchEnroll(ch)
}

// watchEnroll reports a failed re-enroll to the loop (off the loop: the
// result comes only once the loop ran OnOpen).
func (p *pausedConn) watchEnroll(ch <-chan gnet.RegisteredResult) {
	r := <-ch
	if r.Err == nil && r.Conn != nil {
		return
	}
	err := r.Err
	if err == nil {
		err = errors.New("pause: re-enroll failed")
	}
	_ = p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		if p.st == rpResuming {
			p.closeAs(err, true)
		}
		return nil
	}))
}

// reattached is OnOpen of the re-enrolled connection.
func (p *pausedConn) reattached(c gnet.Conn) (out []byte, action gnet.Action) {
	if p.st != rpResuming { // closed while re-enrolling: OnClose(c) finds c is not p.live
		return nil, gnet.Close
	}
	p.live, p.st = c, rpAttached
	p.untrack()
	if p.q.Len() > 0 && p.sp == nil { // written while detached or re-enrolling: first
		if _, err := p.q.WriteTo(c.Fd()); err != nil {
			return nil, gnet.Close // OnClose(c) tells the owner
		}
		if p.q.Len() > 0 {
			p.armDrain()
		}
	}
	if p.off < len(p.in) {
		_ = c.Wake(nil) // the owner reads its stash even if the peer sends nothing more
	}
	if p.again {
		p.again = false
		_ = p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			// Only if a reason still holds it: the reason that asked
			// the pause again may have been dropped since OnOpen (a
			// dial that ended between them), and a pause with no reason
			// is never resumed: the client's next request waited in the
			// kernel until it gave up (20 s for franz-go).
			if p.st == rpAttached && !p.notified && p.why != 0 {
				p.pause()
			}
			return nil
		}))
	}
	return nil, gnet.None
}

// liveClosed is OnClose of a gnet connection whose context is p: true when
// it is p's connection of the moment and the owner must hear of it; false
// for a detach (or a connection re-enrolled after p was closed).
func (p *pausedConn) liveClosed(c gnet.Conn) bool {
	if p.live == nil || p.live != c {
		return false
	}
	p.live, p.st = nil, rpClosed
	p.abortSplice()
	p.q.Reset()
	p.disarm()
	if p.notified {
		return false
	}
	p.notified = true
	p.untrack()
	return true
}

// closeAs ends a detached connection: the socket is closed once and the
// owner told as gnet would (at once for a failed write, as gnet does
// inside Write; later, on the loop, for Close).
func (p *pausedConn) closeAs(err error, now bool) {
	p.abortSplice()
	p.disarm()
	if p.fd >= 0 {
		_, _ = p.q.WriteTo(p.fd) // best effort, as gnet's close
		_ = unix.Close(p.fd)
		p.fd = -1
	}
	p.q.Reset()
	p.in, p.off = nil, 0
	p.st = rpClosed
	if now {
		p.notify(err)
		return
	}
	// If the loop no longer runs, the engine's stop tells the owner.
	_ = p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer p.e.recoverConn(nil, "close")
		p.notify(err)
		return nil
	}))
}

func (p *pausedConn) notify(err error) {
	if p.notified {
		return
	}
	p.notified = true
	p.untrack()
	p.e.closed(p.ctx, err)
}

// track keeps p in its loop's set while the tick or the engine's stop has
// something to do with it.
func (p *pausedConn) track() {
	if p.lp.pauses.m == nil {
		p.lp.pauses.m = map[*pausedConn]struct{}{}
	}
	p.lp.pauses.m[p] = struct{}{}
}

func (p *pausedConn) untrack() { delete(p.lp.pauses.m, p) }

// pauseSet is a loop's connections with a pause under way, and its drain
// watcher (flow.go).
type pauseSet struct {
	dw       *drainWatch
	dwFailed bool
	m        map[*pausedConn]struct{}
	pfd      []unix.PollFd
	pcs      []*pausedConn
	lastFull time.Time
}

// sweepPaused runs at each tick on loop l: a pause waiting for a flush is
// done once flushed; bytes written while detached go out when the socket
// takes them (POLLOUT); once a second, a peer that closed or reset while
// paused (POLLRDHUP, POLLHUP, POLLERR) is resumed, so that its last bytes
// and its close take the normal way. One poll(2) for the whole loop, and
// only while something is paused.
func (e *Engine) sweepPaused(l *loop) {
	ps := &l.pauses
	if len(ps.m) == 0 {
		return
	}
	now := time.Now()
	full := now.Sub(ps.lastFull) >= time.Second
	if full {
		ps.lastFull = now
	}
	ps.pfd, ps.pcs = ps.pfd[:0], ps.pcs[:0]
	for p := range ps.m {
		switch p.st {
		case rpDetachPending:
			if p.live.OutboundBuffered() == 0 {
				p.detach()
			}
		case rpPaused:
			var ev int16
			if full {
				ev |= kernel.PollPeerClosed
			}
			if p.q.Len() > 0 {
				ev |= unix.POLLOUT
			}
			if ev != 0 {
				ps.pfd = append(ps.pfd, unix.PollFd{Fd: int32(p.fd), Events: ev})
				ps.pcs = append(ps.pcs, p)
			}
		}
	}
	if len(ps.pfd) > 0 {
		if _, err := unix.Poll(ps.pfd, 0); err == nil {
			for i, pf := range ps.pfd {
				p := ps.pcs[i]
				if p.st == rpPaused && pf.Revents&unix.POLLOUT != 0 {
					p.flushOut()
				}
				if p.st == rpPaused && p.sp == nil && pf.Revents&(kernel.PollPeerClosed|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
					p.resumeNow()
				}
			}
		}
	}
	clear(ps.pcs)
}

// closePaused closes the sockets the loops no longer hold and tells their
// owners, as gnet does for its own connections when it stops. It runs once
// every loop has returned (after gnet.Rotate): nothing runs beside it.
func (e *Engine) closePaused() {
	e.loopsMu.Lock()
	loops := make([]*loop, 0, len(e.loops))
	for _, l := range e.loops {
		loops = append(loops, l)
	}
	e.loopsMu.Unlock()
	for _, l := range loops {
		if w := l.pauses.dw; w != nil {
			w.stop()
			l.pauses.dw = nil
		}
		for p := range l.pauses.m {
			func() {
				defer e.recoverConn(nil, "close")
				if p.st != rpClosed {
					p.closeAs(nil, true)
				} else {
					p.notify(nil)
				}
			}()
		}
	}
}

// flushOut writes what waits for the socket (attached or detached), and
// arms the watcher for the rest.
func (p *pausedConn) flushOut() {
	if p.q.Len() == 0 || p.st == rpResuming || p.st == rpClosed || p.sp != nil {
		return
	}
	fd, err := p.sockFd()
	if err != nil {
		return
	}
	if _, err := p.q.WriteTo(fd); err != nil {
		p.writeFailed(os.NewSyscallError("writev", err))
		return
	}
	if p.q.Len() > 0 {
		p.armDrain()
	}
}

// writeFailed closes the connection after a write error, as gnet's Write
// does: the owner is told at once.
func (p *pausedConn) writeFailed(err error) {
	p.q.Reset()
	if p.live != nil {
		_ = p.el.Close(p.live) // synchronous: OnClose(live) tells the owner
		return
	}
	p.closeAs(err, true)
}

// Reading: the stash first, then gnet's buffer. Once both are read through
// the stash, what gnet holds is moved after it (a copy, only while a stash
// is left after a resume).

func (p *pausedConn) stashed() int { return len(p.in) - p.off }

// absorb moves what gnet holds after the stash.
func (p *pausedConn) absorb() {
	if p.live == nil || p.live.InboundBuffered() == 0 {
		return
	}
	b, err := p.live.Peek(-1)
	if err != nil {
		return
	}
	p.in = append(p.in[p.off:len(p.in):len(p.in)], b...)
	p.off = 0
	_, _ = p.live.Discard(len(b))
}

func (p *pausedConn) dropStash() { p.in, p.off = nil, 0 }

func (p *pausedConn) InboundBuffered() int {
	n := p.stashed()
	if p.live != nil {
		n += p.live.InboundBuffered()
	}
	return n
}

func (p *pausedConn) Peek(n int) ([]byte, error) {
	if p.stashed() == 0 {
		if p.live != nil {
			return p.live.Peek(n)
		}
		if n > 0 {
			return nil, io.ErrShortBuffer
		}
		return nil, nil
	}
	if n <= 0 || n > p.stashed() {
		p.absorb()
	}
	if n <= 0 {
		n = p.stashed()
	}
	if n > p.stashed() {
		return nil, io.ErrShortBuffer
	}
	return p.in[p.off : p.off+n : p.off+n], nil
}

func (p *pausedConn) Discard(n int) (int, error) {
	s := p.stashed()
	if s == 0 {
		if p.live != nil {
			return p.live.Discard(n)
		}
		return 0, nil
	}
	if n > 0 && n < s {
		p.off += n
		return n, nil
	}
	p.dropStash()
	if p.live == nil {
		return s, nil
	}
	if n <= 0 || n-s >= p.live.InboundBuffered() {
		m, _ := p.live.Discard(-1)
		return s + m, nil
	}
	if n > s {
		_, _ = p.live.Discard(n - s)
	}
	return n, nil
}

func (p *pausedConn) Next(n int) ([]byte, error) {
	if p.stashed() == 0 && p.live != nil {
		return p.live.Next(n)
	}
	b, err := p.Peek(n)
	if err != nil {
		return nil, err
	}
	_, _ = p.Discard(len(b))
	return b, nil
}

func (p *pausedConn) Read(b []byte) (int, error) {
	if p.stashed() == 0 {
		if p.live != nil {
			return p.live.Read(b)
		}
		if len(b) > 0 {
			return 0, io.ErrShortBuffer
		}
		return 0, nil
	}
	n := copy(b, p.in[p.off:])
	p.off += n
	if p.off == len(p.in) {
		p.dropStash()
		if n < len(b) && p.live != nil {
			m, _ := p.live.Read(b[n:])
			n += m
		}
	}
	return n, nil
}

func (p *pausedConn) WriteTo(w io.Writer) (int64, error) {
	var n int64
	if s := p.stashed(); s > 0 {
		m, err := w.Write(p.in[p.off:])
		n += int64(m)
		p.off += m
		if err != nil {
			return n, err
		}
		p.dropStash()
	}
	if p.live != nil {
		m, err := p.live.WriteTo(w)
		return n + m, err
	}
	return n, nil
}

// Writing: gnet's while it still holds bytes of the connection (sent
// first: the order is kept); then, attached or not, straight to the
// socket, the rest queued (q) and written when the socket takes more (the
// drain watcher). An error closes, as gnet's Write does.

// Write is Writev of one slice, through a scratch vector of the stand-in's
// own (a [][]byte literal would escape, through gnet's Writev, at each
// coalesced flush). A Write re-entered from a close inside it takes a fresh one.
func (p *pausedConn) Write(b []byte) (int, error) {
	if p.oneBusy {
		return p.Writev([][]byte{b})
	}
	p.oneBusy = true
	p.one[0] = b
	n, err := p.Writev(p.one[:])
	p.one[0] = nil
	p.oneBusy = false
	return n, err
}

func (p *pausedConn) Writev(bs [][]byte) (int, error) {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	switch p.st {
	case rpClosed:
		return 0, net.ErrClosed
	case rpAttached, rpDetachPending:
		if p.live.OutboundBuffered() > 0 {
			return p.live.Writev(bs)
		}
	}
	if p.st == rpResuming || p.q.Len() > 0 || (p.sp != nil && p == p.sp.cp) {
		for _, b := range bs {
			p.q.Push(b)
		}
		return n, nil
	}
	fd, err := p.sockFd()
	if err != nil {
		return 0, err
	}
	if err := p.q.WriteDirect(fd, bs); err != nil {
		err = os.NewSyscallError("writev", err)
		p.writeFailed(err)
		return 0, err
	}
	if p.q.Len() > 0 {
		p.armDrain()
	}
	return n, nil
}

func (p *pausedConn) ReadFrom(r io.Reader) (int64, error) {
	b, err := io.ReadAll(r)
	if len(b) > 0 {
		if _, werr := p.Write(b); werr != nil {
			return 0, werr
		}
	}
	return int64(len(b)), err
}

func (p *pausedConn) SendTo([]byte, net.Addr) (int, error) { return 0, gerrors.ErrUnsupportedOp }

func (p *pausedConn) Flush() error {
	if p.live != nil && p.live.OutboundBuffered() > 0 {
		return p.live.Flush()
	}
	p.flushOut()
	return nil
}

// OutboundBuffered counts what gnet holds and what the stand-in queued.
func (p *pausedConn) OutboundBuffered() int {
	n := p.q.Len()
	if s := p.sp; s != nil && p == s.cp {
		n += int(s.preLeft.Load()) // handed to the splice session, not written yet
	}
	if p.live != nil {
		n += p.live.OutboundBuffered()
	}
	return n
}

// AsyncWrite may be called from any goroutine: the write happens on the loop.
func (p *pausedConn) AsyncWrite(b []byte, cb gnet.AsyncCallback) error {
	return p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		_, err := p.Write(b)
		if cb != nil {
			_ = cb(p, err)
		}
		return nil
	}))
}

// AsyncWritev may be called from any goroutine.
func (p *pausedConn) AsyncWritev(bs [][]byte, cb gnet.AsyncCallback) error {
	return p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		_, err := p.Writev(bs)
		if cb != nil {
			_ = cb(p, err)
		}
		return nil
	}))
}

// The socket.

func (p *pausedConn) sockFd() (int, error) {
	switch {
	case p.live != nil:
		return p.live.Fd(), nil
	case p.fd >= 0:
		return p.fd, nil
	}
	return -1, net.ErrClosed
}

func (p *pausedConn) Fd() int { fd, _ := p.sockFd(); return fd }

func (p *pausedConn) Dup() (int, error) {
	fd, err := p.sockFd()
	if err != nil {
		return -1, err
	}
	return kernel.Dup(fd)
}

func (p *pausedConn) setInt(level, opt, v int) error {
	fd, err := p.sockFd()
	if err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt", unix.SetsockoptInt(fd, level, opt, v))
}

func (p *pausedConn) SetReadBuffer(n int) error {
	return p.setInt(unix.SOL_SOCKET, unix.SO_RCVBUF, n)
}

func (p *pausedConn) SetWriteBuffer(n int) error {
	return p.setInt(unix.SOL_SOCKET, unix.SO_SNDBUF, n)
}

func (p *pausedConn) SetNoDelay(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return p.setInt(unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
}

func (p *pausedConn) SetLinger(sec int) error {
	fd, err := p.sockFd()
	if err != nil {
		return err
	}
	l := unix.Linger{}
	if sec >= 0 {
		l.Onoff, l.Linger = 1, int32(sec)
	}
	return os.NewSyscallError("setsockopt", unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &l))
}

func (p *pausedConn) SetKeepAlivePeriod(d time.Duration) error {
	return p.SetKeepAlive(true, d, d, 0)
}

func (p *pausedConn) SetKeepAlive(on bool, idle, intvl time.Duration, cnt int) error {
	if !on {
		return p.setInt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, 0)
	}
	if intvl <= 0 {
		intvl = idle / 5
	}
	if cnt <= 0 {
		cnt = 5
	}
	if int(idle.Seconds()) < 1 || int(intvl.Seconds()) < 1 {
		return gerrors.ErrUnsupportedOp
	}
	fd, err := p.sockFd()
	if err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt", kernel.SetKeepAlive(fd, int(idle.Seconds()), int(intvl.Seconds()), cnt))
}

// The connection.

func (p *pausedConn) Context() any                { return p.ctx }
func (p *pausedConn) SetContext(ctx any)          { p.ctx = ctx }
func (p *pausedConn) EventLoop() gnet.EventLoop   { return p.el }
func (p *pausedConn) LocalAddr() net.Addr         { return p.local }
func (p *pausedConn) RemoteAddr() net.Addr        { return p.remote }
func (p *pausedConn) SetDeadline(time.Time) error { return gerrors.ErrUnsupportedOp }

func (p *pausedConn) SetReadDeadline(time.Time) error  { return gerrors.ErrUnsupportedOp }
func (p *pausedConn) SetWriteDeadline(time.Time) error { return gerrors.ErrUnsupportedOp }

// Wake may be called from any goroutine: an OnTraffic for the owner once
// the connection is attached (the stash is read then).
func (p *pausedConn) Wake(cb gnet.AsyncCallback) error {
	return p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		if p.live != nil {
			return p.live.Wake(cb)
		}
		if cb != nil {
			_ = cb(p, nil)
		}
		return nil
	}))
}

// Close closes the connection, on its loop; the owner's OnClose follows
// later on the loop, as with gnet's Close.
func (p *pausedConn) Close() error {
	p.abortSplice()
	switch p.st {
	case rpAttached, rpDetachPending:
		// What the socket takes now goes (best effort, as gnet's close);
		// the rest is dropped with the connection.
		_, _ = p.q.WriteTo(p.live.Fd())
		p.q.Reset()
		p.disarm()
		return p.live.Close()
	case rpPaused, rpResuming:
		p.closeAs(nil, false)
	}
	return nil
}

func (p *pausedConn) CloseWithCallback(cb gnet.AsyncCallback) error {
	err := p.Close()
	if cb != nil {
		_ = p.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			return cb(p, err)
		}))
	}
	return err
}
