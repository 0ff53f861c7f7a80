package looptls

import (
	"net"
	"sync"
	"time"
)

// Stream is a socket as the loop reads and writes it (conn.Conn).
type Stream interface {
	Buffered() int
	Peek(n int) ([]byte, error)
	Discard(n int)
	Write(b []byte) error
	AsyncWrite(b []byte) error // from any goroutine; b is not copied
}

// wouldBlock is IO's "nothing buffered": temporary, so tls.Conn returns it
// without breaking the connection.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "looptls: would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// ErrWouldBlock is what IO's Read returns on the loop with nothing buffered.
var ErrWouldBlock error = wouldBlock{}

// IO is the net.Conn under a tls.Conn whose bytes are the loop's.
type IO struct {
	s             Stream
	local, remote net.Addr

	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte // fed by the loop during a worker's handshake, read first after it
	closed bool
	onLoop bool
}

// NewIO makes the adapter of s: on the loop at once (onLoop: a handshake
// already done, or run on the loop), or for a worker's handshake first.
func NewIO(s Stream, local, remote net.Addr, onLoop bool) *IO {
	a := &IO{s: s, local: local, remote: remote, onLoop: onLoop}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// SetStream changes the socket handle IO reads and writes (on the loop).
func (a *IO) SetStream(s Stream) { a.s = s }

// Feed copies bytes the loop read for the handshake's worker.
func (a *IO) Feed(b []byte) {
	a.mu.Lock()
	a.buf = append(a.buf, b...)
	a.mu.Unlock()
	a.cond.Broadcast()
}

// Buffered is what was fed and not read yet.
func (a *IO) Buffered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.buf)
}

// OnLoop ends the worker's part: from now on IO reads and writes on the
// loop (what was fed and not read is read first).
func (a *IO) OnLoop() {
	a.mu.Lock()
	a.onLoop = true
	a.mu.Unlock()
}

func (a *IO) Read(p []byte) (int, error) {
	a.mu.Lock()
	if !a.onLoop {
		for len(a.buf) == 0 && !a.closed {
			a.cond.Wait()
		}
		if len(a.buf) == 0 {
			a.mu.Unlock()
			return 0, net.ErrClosed
		}
	}
	if len(a.buf) > 0 {
		n := copy(p, a.buf)
		a.buf = a.buf[n:]
		a.mu.Unlock()
		return n, nil
	}
	a.mu.Unlock()
	// On the loop only.
	n := min(a.s.Buffered(), len(p))
	if n == 0 {
		return 0, ErrWouldBlock
	}
	b, err := a.s.Peek(n)
	if err != nil {
		return 0, ErrWouldBlock
	}
	copy(p, b)
	a.s.Discard(n)
	return n, nil
}

func (a *IO) Write(p []byte) (int, error) {
	a.mu.Lock()
	loop, closed := a.onLoop, a.closed
	a.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	if loop {
		if err := a.s.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	// Off the loop: the write happens later on the loop, so copy.
	if err := a.s.AsyncWrite(append([]byte(nil), p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close wakes a worker waiting in Read; it does not close the socket.
func (a *IO) Close() error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cond.Broadcast()
	return nil
}

func (a *IO) LocalAddr() net.Addr                { return a.local }
func (a *IO) RemoteAddr() net.Addr               { return a.remote }
func (a *IO) SetDeadline(t time.Time) error      { return nil }
func (a *IO) SetReadDeadline(t time.Time) error  { return nil }
func (a *IO) SetWriteDeadline(t time.Time) error { return nil }
