package session

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/conn"
	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// recConn is a handle over a SOCK_SEQPACKET socket pair: each system
// call that writes makes one record, so the records read at the other end
// count the writes the real connection would make.
type recConn struct {
	*conn.Conn
	peer   int
	buf    []byte
	writes [][]byte
	// onClosed runs when a write fails and the handle closes inside it
	// (the client's release, re-entrant).
	onClosed func()
}

// fakeGnet is the little of a gnet connection a handle uses.
type fakeGnet struct {
	gnet.Conn
	fd  int
	ctx any
}

func (f *fakeGnet) Fd() int              { return f.fd }
func (f *fakeGnet) Context() any         { return f.ctx }
func (f *fakeGnet) SetContext(c any)     { f.ctx = c }
func (f *fakeGnet) LocalAddr() net.Addr  { return nil }
func (f *fakeGnet) RemoteAddr() net.Addr { return nil }
func (f *fakeGnet) InboundBuffered() int { return 0 }

// fakeLoop closes a fake connection at once, as gnet does inside a failed write.
type fakeLoop struct{ gnet.EventLoop }

func (fakeLoop) Close(gc gnet.Conn) error {
	gc.Context().(*conn.Conn).GnetClosed(gc, errors.New("closed"))
	return nil
}

func newRecConn(t *testing.T) *recConn {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	r := &recConn{peer: fds[1], buf: make([]byte, 1<<20)}
	r.Conn = conn.Open(conn.NewLoop(fakeLoop{}, nil, nil), &fakeGnet{fd: fds[0]}, r, 1<<30, 1<<20)
	return r
}

// read collects the records written since the last read.
func (r *recConn) read() [][]byte {
	for {
		n, err := unix.Read(r.peer, r.buf)
		if n <= 0 || err != nil {
			return r.writes
		}
		r.writes = append(r.writes, append([]byte(nil), r.buf[:n]...))
	}
}

// reset drops what was written, without allocating.
func (r *recConn) reset() {
	for {
		if n, err := unix.Read(r.peer, r.buf); n <= 0 || err != nil {
			break
		}
	}
	r.writes = r.writes[:0]
}

func (r *recConn) Traffic() {}
func (r *recConn) Above()   {}
func (r *recConn) Below()   {}
func (r *recConn) Drained() {}
func (r *recConn) Closed(error) {
	if r.onClosed != nil {
		r.onClosed()
	}
}

func frameOf(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// Issue 11.4: the frames written to one connection during one traffic
// event leave in one write, in order; a frame too large to copy is
// written from its slices after what was batched before it; outside an
// event nothing waits.
func TestCoalescedWritesOnePerEvent(t *testing.T) {
	r := newCoalesceRig(t)
	r.onePerEvent(t)
	// A large frame: what came before it first, then the frame itself.
	r.largeFrame(t)
	// Outside an event (the sweep, a dial's end): written at once.
	r.outsideEvent(t)
	// The gateway closes a client: what it was owed goes first; a client
	// gone (released) is owed nothing, its broker still gets its requests.
	r.closingClient(t)
	// A flush whose write fails: the handle closes inside the write, and
	// the client's release flushes the same batch again: nothing is
	// written twice, and the next batch holds only what comes after.
	r.failedFlush(t)
}

// coalesceRig is a client and its broker connection on one loop, each
// writing to a recording connection.
type coalesceRig struct {
	lp     *Loop
	cl     *Client
	up     *upstreamConn
	cc, bc *recConn
}

// newCoalesceRig: a client, its broker connection and their recorders.
func newCoalesceRig(t *testing.T) *coalesceRig {
	cc, bc := newRecConn(t), newRecConn(t)
	lp := &Loop{}
	cl := &Client{c: cc.Conn, lp: lp}
	up := &upstreamConn{cl: cl, c: bc.Conn, ready: true}
	cl.up.conn = up
	return &coalesceRig{lp: lp, cl: cl, up: up, cc: cc, bc: bc}
}

// onePerEvent: the frames written to the client and to the broker during
// one event leave at its end, one write each, in order.
func (r *coalesceRig) onePerEvent(t *testing.T) {
	lp, cl, up, cc, bc := r.lp, r.cl, r.up, r.cc, r.bc
	lp.out.begin()
	cl.answers().writev([][]byte{frameOf('a', 10), frameOf('b', 600)})
	cl.answers().write(frameOf('c', 5))
	up.write([][]byte{frameOf('x', 16<<10), frameOf('y', 300)})
	up.write([][]byte{frameOf('z', 16<<10)})
	if len(cc.read())+len(bc.read()) != 0 {
		t.Fatalf("written during the event: %d to the client, %d to the broker", len(cc.writes), len(bc.writes))
	}
	lp.out.end()
	cc.read()
	bc.read()
	want := string(frameOf('a', 10)) + string(frameOf('b', 600)) + string(frameOf('c', 5))
	if len(cc.writes) != 1 || string(cc.writes[0]) != want {
		t.Fatalf("client: %d writes, want 1 of the three frames in order", len(cc.writes))
	}
	wantB := string(frameOf('x', 16<<10)) + string(frameOf('y', 300)) + string(frameOf('z', 16<<10))
	if len(bc.writes) != 1 || string(bc.writes[0]) != wantB {
		t.Fatalf("broker: %d writes, want 1 of the two frames in order", len(bc.writes))
	}
}

// largeFrame: a frame of codec.MaxStreamUnit (the largest not streamed) is
// batched with those around it: a read's pipelined requests leave in one
// write; one byte over coalesceMax is written from its slices, after the
// frame batched before it and before the one after.
func (r *coalesceRig) largeFrame(t *testing.T) {
	lp, cl, cc := r.lp, r.cl, r.cc
	cc.reset()
	lp.out.begin()
	cl.answers().write(frameOf('s', 40))
	atMax := frameOf('M', codec.MaxStreamUnit)
	cl.answers().writev([][]byte{atMax[:100], atMax[100:]})
	cl.answers().write(frameOf('t', 40))
	lp.out.end()
	cc.read()
	if want := string(frameOf('s', 40)) + string(atMax) + string(frameOf('t', 40)); len(cc.writes) != 1 || string(cc.writes[0]) != want {
		t.Fatalf("a frame of codec.MaxStreamUnit: %d writes, want 1 of the three frames in order", len(cc.writes))
	}
	cc.reset()
	lp.out.begin()
	cl.answers().write(frameOf('s', 40))
	big := frameOf('L', coalesceMax+1)
	cl.answers().writev([][]byte{big[:100], big[100:]})
	cl.answers().write(frameOf('t', 40))
	lp.out.end()
	cc.read()
	if len(cc.writes) != 3 || string(cc.writes[0]) != string(frameOf('s', 40)) || !bytes.Equal(cc.writes[1], big) || string(cc.writes[2]) != string(frameOf('t', 40)) {
		t.Fatalf("large frame: %d writes, want the small frame, the large one, the small one after it", len(cc.writes))
	}
}

// outsideEvent: a frame written outside an event leaves at once.
func (r *coalesceRig) outsideEvent(t *testing.T) {
	cl, cc := r.cl, r.cc
	cc.reset()
	cl.answers().write(frameOf('n', 8))
	if len(cc.read()) != 1 {
		t.Fatalf("outside an event: %d writes, want 1 at once", len(cc.writes))
	}
}

// closingClient: a released client's batch is dropped and its broker's
// sent; a client closed by the gateway gets its batch before the close.
func (r *coalesceRig) closingClient(t *testing.T) {
	lp, cl, up, cc, bc := r.lp, r.cl, r.up, r.cc, r.bc
	cc.reset()
	bc.reset()
	lp.out.begin()
	cl.answers().write(frameOf('o', 8))
	up.write([][]byte{frameOf('p', 8)})
	cl.flushOwn(true)
	lp.out.end()
	if len(cc.read()) != 0 || len(bc.read()) != 1 {
		t.Fatalf("released client: %d writes to it, %d to its broker; want 0 and 1", len(cc.writes), len(bc.writes))
	}
	lp.out.begin()
	cl.answers().write(frameOf('q', 8))
	cl.flushOwn(false)
	if len(cc.read()) != 1 {
		t.Fatalf("closing client: %d writes before the close, want 1", len(cc.writes))
	}
	lp.out.end()
}

// failedFlush: a flush whose write fails releases the client once, and
// the release's flush writes nothing again; the next batch holds only the
// frame after.
func (r *coalesceRig) failedFlush(t *testing.T) {
	lp, cl, cc := r.lp, r.cl, r.cc
	cc.reset()
	failed := newRecConn(t)
	cl.c = failed.Conn
	unix.Close(failed.peer) // the write fails (the peer is gone)
	released := 0
	failed.onClosed = func() {
		released++
		cl.flushOwn(true)
		cl.closed = true
	}
	lp.out.begin()
	cl.answers().write(frameOf('f', 8))
	lp.out.end()
	if released != 1 || !failed.Conn.Closed() {
		t.Fatalf("failed flush: released %d times, closed %v", released, failed.Conn.Closed())
	}
	cl.closed = false
	cl.c = cc.Conn
	lp.out.begin()
	cl.answers().write(frameOf('g', 8))
	lp.out.end()
	if w := cc.read(); len(w) != 1 || string(w[0]) != string(frameOf('g', 8)) {
		t.Fatalf("after a failed flush, the batch holds something else: %q", w)
	}
}

// Issue 11.4, 11.5: batching a frame allocates nothing once the loop's
// buffer has grown.
func TestCoalescedWritesAllocs(t *testing.T) {
	lp := &Loop{}
	cc, bc := newRecConn(t), newRecConn(t)
	cl := &Client{c: cc.Conn, lp: lp}
	cl.up.conn = &upstreamConn{cl: cl, c: bc.Conn, ready: true}
	req := [][]byte{frameOf('h', 60), frameOf('r', 16<<10)}
	ans := frameOf('a', 80)
	run := func() {
		lp.out.begin()
		for i := 0; i < 4; i++ {
			cl.up.conn.write(req)
			cl.answers().write(ans)
		}
		lp.out.end()
		cc.reset()
		bc.reset()
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
}

// A Conn's write that the socket takes allocates nothing (the
// forward path stays at 0 allocations per frame, invariant 18); what it
// does not take is queued in order (kernel.TestQueueDirectFull).
func TestConnWriteNoAllocs(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	rc := &recConn{}
	p := conn.Open(conn.NewLoop(fakeLoop{}, nil, nil), &fakeGnet{fd: fds[0]}, rc, 1<<20, 256<<10)
	bs := [][]byte{[]byte("head"), bytes.Repeat([]byte("r"), 1000), []byte("tail")}
	sink := make([]byte, 4096)
	n := testing.AllocsPerRun(200, func() {
		if err := p.Writev(bs); err != nil {
			t.Fatal(err)
		}
		if m, _ := unix.Read(fds[1], sink); m != 1008 {
			t.Fatalf("read %d bytes", m)
		}
	})
	if n != 0 {
		t.Fatalf("%.1f allocations per write", n)
	}
}
