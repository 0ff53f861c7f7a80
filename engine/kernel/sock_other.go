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

// PeerClosed: no POLLRDHUP here; Poll is asked whether the socket reads,
// and PeerGone looks at what it reads.
const PeerClosed Events = Readable

// PeerGone reports whether what Poll said of fd, asked PeerClosed, is its
// peer's close or reset: Hangup, or a socket that reads and holds nothing
// but its end (a look, MSG_PEEK) or a reset. A peer that closed after
// bytes not read yet is seen when they are (at the connection's resume).
func PeerGone(fd int, got Events) bool {
	if got&Hangup != 0 {
		return true
	}
	if got&Readable == 0 {
		return false
	}
	var b [1]byte
	n, err := Peek(fd, b[:])
	return (n == 0 && err == nil) || err == unix.ECONNRESET
}

// SetUserTimeout (TCP_USER_TIMEOUT) is Linux's here: a socket closed with
// bytes unsent is released as the system's own timers say.
func SetUserTimeout(fd int, d time.Duration) error { return ErrUnsupported }
