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
