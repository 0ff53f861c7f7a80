//go:build linux && !flexway_portable

package kernel

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peek copies what the socket holds into b without taking it (MSG_PEEK),
// without blocking; 0 when it holds nothing. recvfrom(2) without an
// address: unix.Recvfrom allocates one per call (its sockaddr escapes),
// and a splice pass peeks at every partition's header (0 allocations per
// forwarded frame, P1).
func Peek(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Room is what the socket fd takes before its send buffer is full, by the
// kernel's measure: SO_SNDBUF (as autotuning left it) less what is queued
// (SIOCOUTQ: unsent and unacknowledged), less a thirty-second of it for
// the buffers' own overhead; -1 when either call fails (not bounded).
func Room(fd int) int {
	size, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if err != nil {
		return -1
	}
	queued, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return -1
	}
	return max(0, size-queued-queued>>5)
}

// Unsent is what the socket fd's send queue holds (SIOCOUTQ: unsent and
// unacknowledged), -1 when the call fails.
func Unsent(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return -1
	}
	return n
}

// PeerClosed is what Poll is asked to report of a peer that closed its
// side (POLLRDHUP); Hangup is reported whatever is asked.
const PeerClosed Events = unix.POLLRDHUP

// PeerGone reports whether what Poll said of fd, asked PeerClosed, is its
// peer's close or reset: POLLRDHUP or Hangup, bytes unread or not.
func PeerGone(fd int, got Events) bool { return got&(PeerClosed|Hangup) != 0 }

// SetUserTimeout bounds, by TCP_USER_TIMEOUT, how long the socket fd keeps
// data the peer does not acknowledge, or a zero window the peer does not
// open (Linux 5.12 and later count zero-window probes too): past d the
// kernel resets the connection, and a socket closed with bytes unsent
// (an orphan in FIN-WAIT-1) is released then rather than after minutes of
// probes. d is rounded up to a millisecond.
func SetUserTimeout(fd int, d time.Duration) error {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(ms))
}
