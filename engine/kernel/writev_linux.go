//go:build linux && !flexway_portable

package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// iovecs is a writev's scratch vector, reused: no allocation per call
// (x/sys's Writev allocates past 8 slices).
type iovecs struct{ v []unix.Iovec }

func (s *iovecs) reset()   { clear(s.v); s.v = s.v[:0] }
func (s *iovecs) len() int { return len(s.v) }

func (s *iovecs) add(b []byte) {
	var v unix.Iovec
	v.Base = &b[0]
	v.SetLen(len(b))
	s.v = append(s.v, v)
}

// writev is writev(2) on a non-blocking socket; EAGAIN and EINTR write
// nothing, no error. The vector is cleared after the call: no pointer into
// the caller's bytes outlives it.
func (s *iovecs) writev(fd int) (int, error) {
	defer s.reset()
	if len(s.v) == 0 {
		return 0, nil
	}
	n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&s.v[0])), uintptr(len(s.v)))
	switch e {
	case 0:
		return int(n), nil
	case unix.EAGAIN, unix.EINTR:
		return 0, nil
	}
	return 0, e
}
