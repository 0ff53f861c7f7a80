package kernel

import (
	"github.com/valyala/bytebufferpool"
)

// chunkSize is the unit of a Queue: chunks are pooled, so a queue that fills
// and drains (a consumer slower than its broker) reuses them.
const chunkSize = 64 << 10

// iovMax: one writev takes at most this many slices (UIO_MAXIOV).
const iovMax = 1024

// chunks pools the Queue's chunks. bytebufferpool calibrates what it keeps
// by the length of what it is given back: a chunk goes back at its full
// length (Put empties it), so that the calibration keeps chunkSize ones ones.
var chunks bytebufferpool.Pool

func getChunk() *bytebufferpool.ByteBuffer {
	b := chunks.Get()
	if cap(b.B) < chunkSize {
		b.B = make([]byte, 0, chunkSize)
	}
	b.B = b.B[:0]
	return b
}

func putChunk(b *bytebufferpool.ByteBuffer) {
	b.B = b.B[:cap(b.B)]
	chunks.Put(b)
}

// Queue is a FIFO of bytes in pooled chunks, written to a non-blocking
// socket when it takes them. One goroutine at a time (the loop's).
type Queue struct {
	bufs []*bytebufferpool.ByteBuffer
	off  int // bytes of bufs[0] already written
	n    int // bytes queued
	iov  iovecs
}

// Len is the bytes queued.
func (q *Queue) Len() int { return q.n }

// Push appends b (copied).
func (q *Queue) Push(b []byte) {
	for len(b) > 0 {
		var last *bytebufferpool.ByteBuffer
		if k := len(q.bufs); k > 0 {
			last = q.bufs[k-1]
		}
		if last == nil || len(last.B) == cap(last.B) {
			last = getChunk()
			q.bufs = append(q.bufs, last)
		}
		m := copy(last.B[len(last.B):cap(last.B)], b)
		last.B = last.B[:len(last.B)+m]
		b = b[m:]
		q.n += m
	}
}

// Discard drops n bytes from the front (written elsewhere).
func (q *Queue) Discard(n int) {
	q.n -= n
	for n > 0 && len(q.bufs) > 0 {
		b := q.bufs[0]
		rest := len(b.B) - q.off
		if n < rest {
			q.off += n
			return
		}
		n -= rest
		q.off = 0
		putChunk(b)
		q.bufs[0] = nil
		q.bufs = q.bufs[1:]
	}
	if len(q.bufs) == 0 {
		q.bufs = q.bufs[:0:0]
	}
}

// Reset drops everything queued, its chunks back to the pool.
func (q *Queue) Reset() {
	for _, b := range q.bufs {
		putChunk(b)
	}
	q.bufs, q.off, q.n = nil, 0, 0
	q.iov.reset()
}

// each calls f with the queued bytes in order, chunk by chunk, until f
// returns false; the slices are valid until the queue next changes.
func (q *Queue) each(f func(b []byte) bool) {
	for i, b := range q.bufs {
		s := b.B
		if i == 0 {
			s = s[q.off:]
		}
		if len(s) > 0 && !f(s) {
			return
		}
	}
}

// WriteTo writes what is queued to fd without blocking; it returns the
// bytes written (dropped from the queue). EAGAIN is not an error.
func (q *Queue) WriteTo(fd int) (int, error) {
	if q.n == 0 {
		return 0, nil
	}
	q.iov.reset()
	q.each(func(b []byte) bool {
		q.iov.add(b)
		return q.iov.len() < iovMax
	})
	n, err := q.iov.writev(fd)
	if n > 0 {
		q.Discard(n)
	}
	return n, err
}

// WriteDirect writes bs to fd at once, what the socket takes, and queues
// the rest (the queue must be empty: nothing may pass what waits).
func (q *Queue) WriteDirect(fd int, bs [][]byte) error {
	q.iov.reset()
	total := 0
	for _, b := range bs {
		if len(b) == 0 {
			continue
		}
		total += len(b)
		if q.iov.len() < iovMax {
			q.iov.add(b)
		}
	}
	n, err := q.iov.writev(fd)
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
		q.Push(b[n:])
		n = 0
	}
	return nil
}
