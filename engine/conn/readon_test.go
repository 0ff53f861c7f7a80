package conn

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 35.1: an owner that reads on (ReadOn) in its traffic event gets
// the socket's bytes after what gnet read, in order; what it leaves is
// kept with the Conn (a pooled buffer, not the loop's) and read first at
// its next event; reading on takes far fewer events than gnet's reads of
// 4 KiB; nothing is read on outside the Conn's own event, and the stash is
// given back once consumed.
func TestReadOnKeepsOrderAndCarriesTheRest(t *testing.T) {
	const first, on, unit, total = 4 << 10, 64 << 10, 1000, 2_000_000
	s := startServerReading(t, 1<<20, 1<<19, first, on)
	nc, o := s.accept(t)
	var events, readOns, carried atomic.Int64
	o.keep = true // the test's onTraffic reads
	o.onTraffic = func(o *owner) {
		events.Add(1)
		if o.c.Stashed() > 0 {
			carried.Add(1) // a unit's start kept from the last event
		}
		for {
			// Whole units only: a unit's start waits for the next read.
			if n := o.c.Buffered() / unit * unit; n > 0 {
				b, err := o.c.Peek(n)
				if err != nil {
					t.Errorf("peek %d of %d: %v", n, o.c.Buffered(), err)
					return
				}
				o.mu.Lock()
				o.got.Write(b)
				o.mu.Unlock()
				o.c.Discard(n)
			}
			if o.c.ReadOn(1<<20) == 0 {
				return
			}
			readOns.Add(1)
		}
	}
	want := make([]byte, total)
	for i := range want {
		want[i] = byte(i*7 + i/251)
	}
	go func() {
		_ = nc.SetWriteDeadline(time.Now().Add(wait))
		_, _ = nc.Write(want)
	}()
	eventually(t, "every byte read", func() bool { return len(o.bytes()) == total })
	if !bytes.Equal(o.bytes(), want) {
		t.Fatal("the bytes read are not the bytes sent, in order")
	}
	e, r := events.Load(), readOns.Load()
	t.Logf("%d bytes: %d traffic events, %d reads on, %d events began with a kept unit", total, e, r, carried.Load())
	if r == 0 || carried.Load() == 0 {
		t.Errorf("%d reads on, %d events with a kept unit: the paths are not exercised", r, carried.Load())
	}
	if e > total/first/2 {
		t.Errorf("%d traffic events for %d bytes: reading on should take far fewer than gnet's %d reads", e, total, total/first)
	}
	onLoop(t, o, func() {
		if n := o.c.ReadOn(1 << 20); n != 0 {
			t.Errorf("ReadOn outside the Conn's event read %d bytes", n)
		}
		if o.c.rd.pool != nil || o.c.rd.inMore || o.c.Stashed() != 0 {
			t.Errorf("the stash is held once consumed: pool %v, in the loop's buffer %v, %d bytes", o.c.rd.pool != nil, o.c.rd.inMore, o.c.Stashed())
		}
	})
}

// Without a read that filled gnet's buffer, nothing is read on (the
// socket was emptied then): bytes that come during such an event wait for
// gnet's next read (then read on, after gnet's read of 4 KiB of them).
func TestReadOnOnlyAfterAFullRead(t *testing.T) {
	s := startServerReading(t, 1<<20, 1<<19, 4<<10, 64<<10)
	nc, o := s.accept(t)
	var readOns atomic.Int64
	more := make(chan struct{})
	var once atomic.Bool
	o.onTraffic = func(o *owner) {
		if !once.CompareAndSwap(false, true) {
			return
		}
		// 100 bytes read: 10 KiB more come while the event runs.
		more <- struct{}{}
		<-more
		readOns.Add(int64(o.c.ReadOn(1 << 20)))
	}
	if _, err := nc.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	<-more
	if _, err := nc.Write(make([]byte, 10<<10)); err != nil {
		t.Fatal(err)
	}
	more <- struct{}{}
	eventually(t, "every byte read", func() bool { return len(o.bytes()) == 100+10<<10 })
	if r := readOns.Load(); r != 0 {
		t.Errorf("%d bytes read on in the event of a read of 100 bytes", r)
	}
}

// NoMore (the owner looked at the socket and found it empty) stops reading
// on until gnet's next read, even after a read that filled its buffer.
func TestReadOnNotAfterNoMore(t *testing.T) {
	s := startServerReading(t, 1<<20, 1<<19, 4<<10, 64<<10)
	nc, o := s.accept(t)
	var first atomic.Bool
	var readOn atomic.Int64
	o.onTraffic = func(o *owner) {
		if !first.CompareAndSwap(false, true) {
			return
		}
		o.c.NoMore()
		readOn.Add(int64(o.c.ReadOn(1 << 20)))
	}
	if _, err := nc.Write(make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every byte read", func() bool { return len(o.bytes()) == 32<<10 })
	if n := readOn.Load(); n != 0 {
		t.Errorf("%d bytes read on after NoMore", n)
	}
}
