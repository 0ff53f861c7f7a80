//go:build linux && !flexway_portable

package kernel

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TCP_USER_TIMEOUT bounds a shut window too (Linux 5.12 and later): a
// socket whose peer reads nothing, its bytes unsent, is reset by the
// kernel once the timeout passes (issue 33.7: orphans of gone clients).
func TestUserTimeoutEndsAShutWindow(t *testing.T) {
	a, b, fa, _ := tcpPair(t)
	_ = b.SetReadBuffer(4 << 10) // b reads nothing: its window shuts
	const d = 500 * time.Millisecond
	if err := SetUserTimeout(fa, d); err != nil {
		t.Fatal(err)
	}
	if ms, err := unix.GetsockoptInt(fa, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); err != nil || ms != 500 {
		t.Fatalf("TCP_USER_TIMEOUT reads %d ms (%v), want 500", ms, err)
	}
	buf := make([]byte, 64<<10)
	start := time.Now()
	var err error
	for time.Since(start) < 20*time.Second {
		_ = a.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err = a.Write(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
	}
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("a socket whose peer reads nothing: %v after %v, want ETIMEDOUT", err, time.Since(start))
	}
	if took := time.Since(start); took > d+5*time.Second {
		t.Fatalf("reset %v after the window shut, TCP_USER_TIMEOUT %v", took, d)
	}
	t.Logf("reset %v after the first write", time.Since(start).Round(time.Millisecond))
}

// The calls a splice pass makes for every unit of a stream (a partition's
// header looked at, then taken; the destination's room) allocate nothing:
// 0 allocations per forwarded frame (P1). unix.Recvfrom allocated its
// sockaddr on every peek.
func TestPassCallsAllocateNothing(t *testing.T) {
	a, _, _, fb := tcpPair(t)
	msg := []byte("partition header")
	if _, err := a.Write(msg); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _ := Peek(fb, b)
		if n == len(msg) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("peek saw %d of the %d bytes written", n, len(msg))
		}
		time.Sleep(time.Millisecond)
	}
	var n, room int
	allocs := testing.AllocsPerRun(200, func() {
		n, _ = Peek(fb, b)
		room = Room(fb)
	})
	if allocs != 0 {
		t.Fatalf("Peek and Room allocate %.1f times a call", allocs)
	}
	if n != len(msg) || string(b[:n]) != string(msg) {
		t.Fatalf("peek gave %q, want %q (and the bytes left in the socket)", b[:n], msg)
	}
	if room <= 0 {
		t.Fatalf("an idle socket's room is %d", room)
	}
	if got, err := Read(fb, b); got != len(msg) || err != nil {
		t.Fatalf("read after the peeks: %d bytes (%v), want the %d peeked", got, err, len(msg))
	}
	if n, err := Peek(fb, b); n != 0 || err != unix.EAGAIN {
		t.Fatalf("peek of an emptied socket: %d bytes (%v), want 0 and EAGAIN", n, err)
	}
	if got := testing.AllocsPerRun(100, func() { _, _ = Peek(fb, b) }); got != 0 {
		t.Fatalf("a peek of an empty socket allocates %.1f times", got)
	}
}
