//go:build !linux || flexway_portable

package kernel

import (
	"time"

	"golang.org/x/sys/unix"
)

// Peek copies what the socket holds into b without taking it (MSG_PEEK),
// without blocking; 0 when it holds nothing.
func Peek(fd int, b []byte) (int, error) {
	n, _, err := unix.Recvfrom(fd, b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if n < 0 {
		n = 0
	}
	return n, err
}

// Room is -1 where the kernel does not say what a socket queues: not bounded.
func Room(fd int) int { return -1 }

// Unsent is -1 where the kernel does not say what a socket queues.
func Unsent(fd int) int { return -1 }

// PeerClosed: no POLLRDHUP; a peer's close shows as Hangup or at the
// next read.
const PeerClosed Events = 0

// SetUserTimeout (TCP_USER_TIMEOUT) is Linux's here: a socket closed with
// bytes unsent is released as the system's own timers say.
func SetUserTimeout(fd int, d time.Duration) error { return ErrUnsupported }
