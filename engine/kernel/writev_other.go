//go:build !linux || flexway_portable

package kernel

import "golang.org/x/sys/unix"

// iovecs, where writev is not called directly: the slices written one
// write(2) each, until the socket takes no more.
type iovecs struct{ v [][]byte }

func (s *iovecs) reset()       { clear(s.v); s.v = s.v[:0] }
func (s *iovecs) len() int     { return len(s.v) }
func (s *iovecs) add(b []byte) { s.v = append(s.v, b) }

func (s *iovecs) writev(fd int) (int, error) {
	defer s.reset()
	total := 0
	for _, b := range s.v {
		n, err := unix.Write(fd, b)
		if n > 0 {
			total += n
		}
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			return total, nil
		case err != nil:
			if total > 0 {
				return total, nil // the error comes again at the next write
			}
			return 0, err
		case n < len(b):
			return total, nil
		}
	}
	return total, nil
}
