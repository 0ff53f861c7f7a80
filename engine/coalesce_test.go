package engine

import (
	"bytes"
	"testing"

	"github.com/panjf2000/gnet/v2"
)

// recConn records the writes made to it (one entry per system call the
// real connection would make).
type recConn struct {
	gnet.Conn
	writes  [][]byte
	onWrite func() // a write that fails: gnet closes at once, inside Write
}

func (r *recConn) Write(b []byte) (int, error) {
	r.writes = append(r.writes, append([]byte(nil), b...))
	if r.onWrite != nil {
		r.onWrite()
	}
	return len(b), nil
}

func (r *recConn) Writev(bs [][]byte) (int, error) {
	var w []byte
	for _, b := range bs {
		w = append(w, b...)
	}
	r.writes = append(r.writes, w)
	return len(w), nil
}

func (r *recConn) OutboundBuffered() int { return 0 }

func frameOf(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// Issue 11.4: the frames written to one connection during one traffic
// event leave in one write, in order; a frame too large to copy is
// written from its slices after what was batched before it; outside an
// event nothing waits.
func TestCoalescedWritesOnePerEvent(t *testing.T) {
	cc, bc := &recConn{}, &recConn{}
	lp := &loop{}
	cl := &client{c: cc, lp: lp}
	up := &upstreamConn{cl: cl, c: bc, ready: true}
	cl.up = up

	lp.out.begin()
	cl.writev([][]byte{frameOf('a', 10), frameOf('b', 600)})
	cl.write(frameOf('c', 5))
	up.write([][]byte{frameOf('x', 16<<10), frameOf('y', 300)})
	up.write([][]byte{frameOf('z', 16<<10)})
	if len(cc.writes)+len(bc.writes) != 0 {
		t.Fatalf("written during the event: %d to the client, %d to the broker", len(cc.writes), len(bc.writes))
	}
	lp.out.end()
	want := string(frameOf('a', 10)) + string(frameOf('b', 600)) + string(frameOf('c', 5))
	if len(cc.writes) != 1 || string(cc.writes[0]) != want {
		t.Fatalf("client: %d writes, want 1 of the three frames in order", len(cc.writes))
	}
	wantB := string(frameOf('x', 16<<10)) + string(frameOf('y', 300)) + string(frameOf('z', 16<<10))
	if len(bc.writes) != 1 || string(bc.writes[0]) != wantB {
		t.Fatalf("broker: %d writes, want 1 of the two frames in order", len(bc.writes))
	}

	// A large frame: what came before it first, then the frame itself.
	cc.writes = nil
	lp.out.begin()
	cl.write(frameOf('s', 40))
	big := frameOf('L', coalesceMax+1)
	cl.writev([][]byte{big[:100], big[100:]})
	cl.write(frameOf('t', 40))
	lp.out.end()
	if len(cc.writes) != 3 || string(cc.writes[0]) != string(frameOf('s', 40)) || !bytes.Equal(cc.writes[1], big) || string(cc.writes[2]) != string(frameOf('t', 40)) {
		t.Fatalf("large frame: %d writes, want the small frame, the large one, the small one after it", len(cc.writes))
	}

	// Outside an event (the sweep, a dial's end): written at once.
	cc.writes = nil
	cl.write(frameOf('n', 8))
	if len(cc.writes) != 1 {
		t.Fatalf("outside an event: %d writes, want 1 at once", len(cc.writes))
	}

	// The gateway closes a client: what it was owed goes first; a client
	// gone (released) is owed nothing, its broker still gets its requests.
	cc.writes, bc.writes = nil, nil
	lp.out.begin()
	cl.write(frameOf('o', 8))
	up.write([][]byte{frameOf('p', 8)})
	cl.flushOwn(true)
	lp.out.end()
	if len(cc.writes) != 0 || len(bc.writes) != 1 {
		t.Fatalf("released client: %d writes to it, %d to its broker; want 0 and 1", len(cc.writes), len(bc.writes))
	}
	lp.out.begin()
	cl.write(frameOf('q', 8))
	cl.flushOwn(false)
	if len(cc.writes) != 1 {
		t.Fatalf("closing client: %d writes before the close, want 1", len(cc.writes))
	}
	lp.out.end()

	// A flush whose write fails: gnet closes the client inside the write,
	// and its release flushes the same batch again.
	cc.writes = nil
	cc.onWrite = func() {
		cl.flushOwn(true)
		cl.closed = true
	}
	lp.out.begin()
	cl.write(frameOf('f', 8))
	lp.out.end()
	if len(cc.writes) != 1 {
		t.Fatalf("failed flush: %d writes, want 1", len(cc.writes))
	}
	cl.closed = false
	cc.onWrite = nil
	lp.out.begin()
	cl.write(frameOf('g', 8))
	lp.out.end()
	if len(cc.writes) != 2 || string(cc.writes[1]) != string(frameOf('g', 8)) {
		t.Fatalf("after a failed flush, the batch holds something else: %q", cc.writes[len(cc.writes)-1])
	}
}

// Issue 11.4, 11.5: batching a frame allocates nothing once the loop's
// buffer has grown.
func TestCoalescedWritesAllocs(t *testing.T) {
	lp := &loop{}
	cl := &client{c: &nopConn{}, lp: lp}
	cl.up = &upstreamConn{cl: cl, c: &nopConn{}, ready: true}
	req := [][]byte{frameOf('h', 60), frameOf('r', 16<<10)}
	ans := frameOf('a', 80)
	run := func() {
		lp.out.begin()
		for i := 0; i < 4; i++ {
			cl.up.write(req)
			cl.write(ans)
		}
		lp.out.end()
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
}

type nopConn struct{ gnet.Conn }

func (nopConn) Write(b []byte) (int, error) { return len(b), nil }
func (nopConn) OutboundBuffered() int       { return 0 }
