//go:build linux && !flexway_portable

package kernel

import (
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A look (Poll(0)) says what each socket shows now, and only what was
// asked (Hangup aside), allocating nothing once the set has grown; a
// peer's close shows as PeerClosed.
func TestPollSetSaysWhatEachSocketShows(t *testing.T) {
	_, b, fa, fb := tcpPair(t)
	var ps PollSet
	fill := func() {
		ps.Reset()
		ps.Add(fa, Readable)
		ps.Add(fb, Writable)
	}
	fill()
	if err := ps.Poll(0); err != nil {
		t.Fatal(err)
	}
	if ps.Len() != 2 || ps.Ready(0) != 0 || ps.Ready(1) != Writable {
		t.Fatalf("nothing sent: %d descriptors, a %#x, b %#x (want 0, Writable)", ps.Len(), ps.Ready(0), ps.Ready(1))
	}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ps.Ready(0)&Readable == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a byte sent and its socket not Readable")
		}
		fill()
		if err := ps.Poll(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { fill(); _ = ps.Poll(0) }); n != 0 {
		t.Fatalf("%.1f allocations per look", n)
	}
	ps.Reset()
	ps.Add(fa, PeerClosed)
	b.Close()
	if err := ps.Poll(10 * time.Second); err != nil || ps.Ready(0)&(PeerClosed|Hangup) == 0 {
		t.Fatalf("the peer closed: %#x, %v", ps.Ready(0), err)
	}
}

// SetLinger(fd, 0): a close resets the connection, its peer reads
// ECONNRESET rather than EOF; a negative sec turns it off.
func TestSetLingerZeroResets(t *testing.T) {
	a, b, fa, _ := tcpPair(t)
	if err := SetLinger(fa, -1); err != nil {
		t.Fatal(err)
	}
	if l, err := unix.GetsockoptLinger(fa, unix.SOL_SOCKET, unix.SO_LINGER); err != nil || l.Onoff != 0 {
		t.Fatalf("SetLinger(-1): %+v, %v", l, err)
	}
	if err := SetLinger(fa, 0); err != nil {
		t.Fatal(err)
	}
	if l, err := unix.GetsockoptLinger(fa, unix.SOL_SOCKET, unix.SO_LINGER); err != nil || l.Onoff != 1 || l.Linger != 0 {
		t.Fatalf("SetLinger(0): %+v, %v", l, err)
	}
	a.Close()
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the peer read %v, want ECONNRESET", err)
	}
	if err := SetLinger(-1, 0); err == nil {
		t.Fatal("SetLinger on no descriptor: no error")
	}
}

// Adopt makes a net.Conn of a socket's descriptor (the connection goes on
// through it) and takes the descriptor; a socket whose peer reset it is
// ErrPeerGone.
func TestAdopt(t *testing.T) {
	_, b, fa, _ := tcpPair(t)
	dup, err := unix.FcntlInt(uintptr(fa), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Adopt(dup, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.RemoteAddr().String() != b.LocalAddr().String() {
		t.Fatalf("adopted: remote %v, want %v", nc.RemoteAddr(), b.LocalAddr())
	}
	if _, err := nc.Write([]byte("through")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 7)
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(b, got); err != nil || string(got) != "through" {
		t.Fatalf("read %q, %v", got, err)
	}

	// The peer resets: once its socket shows it, Adopt says the peer is gone.
	_, d, fc, _ := tcpPair(t)
	_ = d.SetLinger(0)
	d.Close()
	var ps PollSet
	ps.Add(fc, PeerClosed)
	if err := ps.Poll(10 * time.Second); err != nil || ps.Ready(0)&Hangup == 0 {
		t.Fatalf("the peer reset: %#x, %v", ps.Ready(0), err)
	}
	dup, err = unix.FcntlInt(uintptr(fc), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := Adopt(dup, nil); !errors.Is(err, ErrPeerGone) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a reset socket adopted: %v, want ErrPeerGone", err)
	}
}
