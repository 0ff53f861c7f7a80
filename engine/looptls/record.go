package looptls

import (
	"crypto/tls"
	"errors"
	"io"
)

// Record is a TLS connection's record layer on the loop: the plaintext it
// decrypted, read as a socket's buffer is (Buffered, Peek, Discard), and
// its writes encrypted. On the loop only.
type Record struct {
	tc    *tls.Conn
	plain []byte // decrypted: plain[off:] not consumed yet
	off   int
	out   []byte // scratch: the plaintext of one vectored write
	err   error  // the connection's end, once met
}

// NewRecord runs tc's record layer on the loop (its IO on the loop).
func NewRecord(tc *tls.Conn) *Record { return &Record{tc: tc} }

// Conn is the tls.Conn (its state: the peer's certificates).
func (r *Record) Conn() *tls.Conn { return r.tc }

// Pump decrypts everything the socket holds into the plaintext buffer. It
// returns nil, or the connection's end: io.EOF for the peer's
// close_notify, another error for a broken one (the owner closes).
func (r *Record) Pump() error {
	for r.err == nil {
		if r.off > 0 && r.off == len(r.plain) {
			r.plain, r.off = r.plain[:0], 0
		}
		if cap(r.plain)-len(r.plain) < 16<<10 {
			// A new buffer: slices peeked before stay as they were.
			np := make([]byte, len(r.plain)-r.off, 2*(len(r.plain)-r.off)+32<<10)
			copy(np, r.plain[r.off:])
			r.plain, r.off = np, 0
		}
		n, err := r.tc.Read(r.plain[len(r.plain):cap(r.plain)])
		r.plain = r.plain[:len(r.plain)+n]
		if err != nil {
			var ne interface{ Temporary() bool }
			if errors.As(err, &ne) && ne.Temporary() {
				return nil
			}
			r.err = err
			return err
		}
		if n == 0 {
			return nil
		}
	}
	return r.err
}

// Buffered is the plaintext not consumed yet.
func (r *Record) Buffered() int { return len(r.plain) - r.off }

// Peek returns the next n plaintext bytes (all for n < 0), valid until
// the next Discard; io.ErrShortBuffer when fewer are buffered.
func (r *Record) Peek(n int) ([]byte, error) {
	avail := r.plain[r.off:]
	if n < 0 {
		return avail, nil
	}
	if n > len(avail) {
		return nil, io.ErrShortBuffer
	}
	return avail[:n:n], nil
}

// Discard consumes n plaintext bytes (all for n <= 0).
func (r *Record) Discard(n int) {
	avail := len(r.plain) - r.off
	if n <= 0 || n > avail {
		n = avail
	}
	r.off += n
}

// Write encrypts b.
func (r *Record) Write(b []byte) error {
	_, err := r.tc.Write(b)
	return err
}

// Writev encrypts bs as one write (records coalesced).
func (r *Record) Writev(bs [][]byte) error {
	r.out = r.out[:0]
	for _, b := range bs {
		r.out = append(r.out, b...)
	}
	_, err := r.tc.Write(r.out)
	if cap(r.out) > 1<<20 {
		r.out = nil // a large write's scratch is not kept
	}
	return err
}
