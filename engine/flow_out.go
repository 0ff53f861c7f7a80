package engine

// The bytes a connection writes that its socket did not take yet (issue
// 11.3). A stand-in (pausedConn) writes straight to its socket and keeps
// the rest here, not in gnet's outbound buffer: the engine then knows when
// the socket takes more (the drain watcher, flow.go), a read pause never
// waits for gnet to flush, and a close can drop them (RST) when the peer
// does not read.

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// outChunk is the unit of an outq: chunks are pooled, so a queue that
// fills and drains (a consumer slower than its broker) reuses them.
const outChunk = 64 << 10

var outPool = sync.Pool{New: func() any { b := make([]byte, 0, outChunk); return &b }}

// outq is a FIFO of bytes in pooled chunks. On its connection's loop only.
type outq struct {
	bufs []*[]byte
	off  int // bytes of bufs[0] already written
	n    int // bytes queued
	iov  []unix.Iovec
}

func (q *outq) len() int { return q.n }

// push appends b (copied).
func (q *outq) push(b []byte) {
	for len(b) > 0 {
		var last *[]byte
		if k := len(q.bufs); k > 0 {
			last = q.bufs[k-1]
		}
		if last == nil || len(*last) == cap(*last) {
			last = outPool.Get().(*[]byte)
			*last = (*last)[:0]
			q.bufs = append(q.bufs, last)
		}
		m := copy((*last)[len(*last):cap(*last)], b)
		*last = (*last)[:len(*last)+m]
		b = b[m:]
		q.n += m
	}
}

// discard drops n bytes written from the front.
func (q *outq) discard(n int) {
	q.n -= n
	for n > 0 && len(q.bufs) > 0 {
		b := q.bufs[0]
		rest := len(*b) - q.off
		if n < rest {
			q.off += n
			return
		}
		n -= rest
		q.off = 0
		*b = (*b)[:0]
		outPool.Put(b)
		q.bufs[0] = nil
		q.bufs = q.bufs[1:]
	}
	if len(q.bufs) == 0 {
		q.bufs = q.bufs[:0:0]
	}
}

// reset drops everything queued, its chunks back to the pool.
func (q *outq) reset() {
	for _, b := range q.bufs {
		*b = (*b)[:0]
		outPool.Put(b)
	}
	q.bufs, q.off, q.n, q.iov = nil, 0, 0, nil
}

// writeTo writes what is queued to fd, without blocking; it returns the
// bytes written (dropped from the queue). EAGAIN is not an error.
func (q *outq) writeTo(fd int) (int, error) {
	if q.n == 0 {
		return 0, nil
	}
	iov := q.iov[:0]
	for i, b := range q.bufs {
		s := *b
		if i == 0 {
			s = s[q.off:]
		}
		if len(s) == 0 {
			continue
		}
		iov = appendIov(iov, s)
		if len(iov) == pauseIOVMax {
			break
		}
	}
	n, err := writevRaw(fd, iov)
	clear(iov) // no pointer into the chunks outlives the call
	q.iov = iov[:0]
	if n > 0 {
		q.discard(n)
	}
	return n, err
}

func appendIov(iov []unix.Iovec, b []byte) []unix.Iovec {
	var v unix.Iovec
	v.Base = &b[0]
	v.SetLen(len(b))
	return append(iov, v)
}

// writevRaw is writev(2) on a non-blocking socket: no allocation (x/sys's
// Writev allocates past 8 slices). EAGAIN and EINTR write nothing, no error.
func writevRaw(fd int, iov []unix.Iovec) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	switch e {
	case 0:
		return int(n), nil
	case unix.EAGAIN, unix.EINTR:
		return 0, nil
	}
	return 0, e
}

// writeDirect writes bs to fd at once, what the socket takes, and queues
// the rest in q (which must be empty). iov is reused scratch.
func (q *outq) writeDirect(fd int, bs [][]byte) error {
	iov := q.iov[:0]
	total := 0
	for _, b := range bs {
		if len(b) == 0 {
			continue
		}
		total += len(b)
		if len(iov) < pauseIOVMax {
			iov = appendIov(iov, b)
		}
	}
	n, err := writevRaw(fd, iov)
	clear(iov)
	q.iov = iov[:0]
	if err != nil {
		return err
	}
	if n == total {
		return nil
	}
	for _, b := range bs {
		if n >= len(b) {
			n -= len(b)
			continue
		}
		q.push(b[n:])
		n = 0
	}
	return nil
}
