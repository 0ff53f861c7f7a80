package kernel

import (
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Events is what poll(2) is asked of a descriptor, and what it reports.
type Events int16

const (
	Readable Events = unix.POLLIN
	Writable Events = unix.POLLOUT
	// Hangup is reported whatever is asked: the peer hung up, the socket
	// failed or the descriptor is not open (POLLHUP, POLLERR, POLLNVAL).
	Hangup Events = unix.POLLHUP | unix.POLLERR | unix.POLLNVAL
)

// PollSet is the descriptors one poll(2) looks at, kept from one Poll to
// the next: once grown, a Poll allocates nothing. One goroutine at a time.
type PollSet struct{ fds []unix.PollFd }

// Reset empties the set, its room kept.
func (s *PollSet) Reset() { s.fds = s.fds[:0] }

// Add asks Poll about fd: what of ev it reports (and Hangup).
func (s *PollSet) Add(fd int, ev Events) {
	s.fds = append(s.fds, unix.PollFd{Fd: int32(fd), Events: int16(ev)})
}

// Len is the number of descriptors in the set.
func (s *PollSet) Len() int { return len(s.fds) }

// Poll waits until a descriptor of the set reports, at most timeout (0: a
// look, negative: no bound, whole milliseconds). EINTR starts the wait
// again.
func (s *PollSet) Poll(timeout time.Duration) error {
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	for i := range s.fds {
		s.fds[i].Revents = 0
	}
	for {
		_, err := unix.Poll(s.fds, ms)
		if err != unix.EINTR {
			return os.NewSyscallError("poll", err) // nil for nil
		}
	}
}

// Ready is what the i-th descriptor added reported at the last Poll.
func (s *PollSet) Ready(i int) Events { return Events(s.fds[i].Revents) }

// StopListening shuts a listening socket down for reading: it stops
// listening for every holder of the socket (another process's descriptor
// too, as a handover leaves), and connections to it are refused.
func StopListening(fd int) error {
	return os.NewSyscallError("shutdown", unix.Shutdown(fd, unix.SHUT_RD))
}

// SetLinger sets SO_LINGER on the socket fd: a close lingers sec seconds
// for its bytes to be taken; 0, a close resets the connection (RST, what
// the socket holds dropped); negative, the system's default.
func SetLinger(fd, sec int) error {
	l := unix.Linger{}
	if sec >= 0 {
		l.Onoff, l.Linger = 1, int32(sec)
	}
	return os.NewSyscallError("setsockopt", unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &l))
}

// Adopt is a net.Conn of the socket fd, to hand to an event loop again
// (gnet's Enroll takes a net.Conn): fd is closed, whatever happens (the
// net.Conn holds its own dup). ErrPeerGone when the socket has no peer
// any more (getpeername fails: the peer reset the connection); rest, if
// not nil, is given fd first, to read what the peer sent before its reset
// (the kernel keeps it readable).
func Adopt(fd int, rest func(fd int)) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f) // its own dup
	if err == nil && nc.RemoteAddr() == nil {
		if rest != nil {
			rest(fd)
		}
		_ = nc.Close()
		nc, err = nil, ErrPeerGone
	}
	_ = f.Close()
	return nc, err
}
