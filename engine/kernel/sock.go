package kernel

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// ErrUnsupported: the call does not exist on this system; the caller takes
// its portable way (a copy, the tick).
var ErrUnsupported = errors.New("kernel: not supported on this system")

// ErrPeerGone: the socket's peer reset the connection (Adopt).
var ErrPeerGone = errors.New("kernel: the peer reset the connection")

// RoomMin is the least room worth a write into a socket's send buffer
// (Room): a destination that takes less is full for a splice pass, and a
// socket without room (conn's NoRoom) has room again from it. Smaller
// passes would cost their system calls for little.
const RoomMin = 4 << 10

// Read reads from a non-blocking fd.
func Read(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }

// Addrs are a TCP socket's own address and its peer's (getsockname,
// getpeername); nil for the one a call does not give.
func Addrs(fd int) (local, remote net.Addr) {
	if fd < 0 {
		return nil, nil
	}
	if sa, err := unix.Getsockname(fd); err == nil {
		local = tcpAddr(sa)
	}
	if sa, err := unix.Getpeername(fd); err == nil {
		remote = tcpAddr(sa)
	}
	return local, remote
}

func tcpAddr(sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	}
	return nil
}
