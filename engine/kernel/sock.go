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

// LocalAddr and PeerAddr are a TCP socket's own address (getsockname) and
// its peer's (getpeername); nil where the call does not give one.
func LocalAddr(fd int) net.Addr { return tcpAddr(unix.Getsockname(fd)) }
func PeerAddr(fd int) net.Addr  { return tcpAddr(unix.Getpeername(fd)) }

func tcpAddr(sa unix.Sockaddr, err error) net.Addr {
	if err != nil {
		return nil
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	}
	return nil
}
