package kernel

import (
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ErrUnsupported: the call does not exist on this system; the caller takes
// its portable way (a copy, the tick).
var ErrUnsupported = errors.New("kernel: not supported on this system")

// Dup duplicates fd (close-on-exec).
func Dup(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// FileTCP is a *net.TCPConn on a dup of fd: Go's poller waits for it.
func FileTCP(fd int) (*net.TCPConn, error) {
	dup, err := Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	c, err := net.FileConn(f) // its own dup
	_ = f.Close()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		return nil, os.ErrInvalid
	}
	return tc, nil
}

// Peek copies what the socket holds into b without taking it (MSG_PEEK),
// without blocking; 0 when it holds nothing.
func Peek(fd int, b []byte) (int, error) {
	n, _, err := unix.Recvfrom(fd, b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if n < 0 {
		n = 0
	}
	return n, err
}

// Read reads from a non-blocking fd.
func Read(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }
