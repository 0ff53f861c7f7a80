//go:build linux && !flexway_portable

package kernel

import (
	"io"

	"golang.org/x/sys/unix"
)

const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// Pipe is a non-blocking pipe for splice(2): bytes go from a socket into
// it and out to another socket without entering the process.
type Pipe struct {
	r, w int
	size int // what it holds (F_SETPIPE_SZ as granted)
}

// NewPipe makes a pipe asked to hold size bytes (the kernel's
// pipe-max-size bounds it: 1 MiB by default).
func NewPipe(size int) (*Pipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	got, err := unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, size)
	if err != nil {
		got, err = unix.FcntlInt(uintptr(fds[1]), unix.F_GETPIPE_SZ, 0)
	}
	if err != nil || got <= 0 {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
		if err == nil {
			err = io.ErrShortBuffer
		}
		return nil, err
	}
	return &Pipe{r: fds[0], w: fds[1], size: got}, nil
}

// Size is what the pipe holds at most.
func (p *Pipe) Size() int { return p.size }

// Close closes both ends.
func (p *Pipe) Close() {
	_ = unix.Close(p.r)
	_ = unix.Close(p.w)
}

// From splices up to n bytes from the socket src into the pipe: the
// bytes moved, 0 when the socket holds none (EAGAIN), has ended or failed
// (the socket's next read says which). EINTR is retried.
func (p *Pipe) From(src, n int) int {
	for {
		m, err := unix.Splice(src, nil, p.w, nil, n, spliceFlags)
		if m > 0 {
			return int(m)
		}
		if err != unix.EINTR {
			return 0
		}
	}
}

// To splices n bytes from the pipe to the socket fd; it returns how many
// are still in the pipe (the socket took no more, or failed: the
// connection's own next write says which).
func (p *Pipe) To(fd, n int) int {
	for n > 0 {
		m, err := unix.Splice(p.r, nil, fd, nil, n, spliceFlags)
		if m > 0 {
			n -= int(m)
			continue
		}
		if err != unix.EINTR {
			break
		}
	}
	return n
}

// Read reads what the pipe holds into b (bytes a socket did not take).
func (p *Pipe) Read(b []byte) (int, error) {
	for {
		m, err := unix.Read(p.r, b)
		if err == unix.EINTR {
			continue
		}
		if m <= 0 && err == nil {
			err = io.ErrUnexpectedEOF
		}
		return max(m, 0), err
	}
}
