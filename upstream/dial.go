package upstream

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// keepAlive is the TCP keep-alive period of a broker connection.
const keepAlive = 30 * time.Second

// maxAuthAnswer bounds a SASL answer read during the dial.
const maxAuthAnswer = 1 << 20

// Conn is a dialed broker connection, ready for Kafka requests: TLS done
// and SASL authenticated when the upstream declares them. Its net.Conn is
// the stream to write requests to (the tls.Conn under TLS); Socket is the
// TCP socket to enroll on an event loop, after which the TLS record layer
// reads and writes through HandOff's loopIO.
type Conn struct {
	net.Conn
	sock net.Conn
	tls  *tls.Conn
	sw   *swapConn
	auth *Auth // nil without SASL
}

// Socket is the TCP connection under the stream.
func (c *Conn) Socket() net.Conn { return c.sock }

// TLS is the TLS connection, nil in clear text.
func (c *Conn) TLS() *tls.Conn { return c.tls }

// Auth is the SASL exchange the dial ran (its RenewBy says when the
// session must be renewed), nil without SASL.
func (c *Conn) Auth() *Auth { return c.auth }

// LoopIO is the byte stream of an enrolled socket, as its event loop sees
// it: Read returns what is buffered, or a temporary error when nothing is.
type LoopIO interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
}

// HandOff moves the TLS record layer from the socket (the dial) to io
// (the event loop that enrolled it). Call it on that loop, once, before
// any read or write there; a no-op in clear text.
func (c *Conn) HandOff(io LoopIO) {
	if c.sw != nil {
		c.sw.handOff(io)
	}
}

// Dial opens a connection to addr, a broker's address as Addr returned it,
// and runs the upstream's TLS handshake and SASL exchange on it, all within
// the upstream's timeout (upstreams.<name>.timeout: "a connection to a
// broker, TLS and SASL included"). The caller owns the connection (the
// engine enrolls its Socket on its client's event loop). Dial blocks: call
// it off the event loops. A refused certificate is a *TLSError, refused
// credentials an *AuthError.
func (u *Upstream) Dial(ctx context.Context, addr string) (*Conn, error) {
	// One deadline for the whole (U1): what the TCP connection took is
	// not given again to the TLS handshake and the SASL exchange.
	deadline := time.Now().Add(u.cfg.Timeout.D())
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	nc, err := u.dialTCP(ctx, addr, deadline)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Conn{Conn: nc, sock: nc}
	sec := u.sec.load()
	if sec.tls != nil || sec.mech != nil {
		_ = nc.SetDeadline(deadline)
	}
	if sec.tls != nil {
		host, _, _ := net.SplitHostPort(addr)
		c.sw = &swapConn{Conn: nc}
		c.tls = tls.Client(c.sw, sec.tlsFor(host))
		hctx, cancel := context.WithDeadline(ctx, deadline)
		err := c.tls.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = nc.Close()
			return nil, &TLSError{Upstream: u.name, Broker: addr, Err: err}
		}
		c.Conn = c.tls
	}
	if a := u.NewAuth(addr); a != nil {
		if err := a.run(c.Conn); err != nil {
			_ = nc.Close()
			if IsAuthError(err) {
				u.sec.refusedUntil.Store(time.Now().Add(refusalHold).UnixNano())
			}
			return nil, err
		}
		c.auth = a
		u.sec.refusedUntil.Store(0)
	}
	if sec.tls != nil || sec.mech != nil {
		_ = nc.SetDeadline(time.Time{})
	}
	return c, nil
}

// dialTCP opens a dial's TCP connection, by deadline.
func (u *Upstream) dialTCP(ctx context.Context, addr string, deadline time.Time) (net.Conn, error) {
	if u.testTCP != nil {
		return u.testTCP(ctx, addr, deadline)
	}
	d := net.Dialer{Deadline: deadline, KeepAlive: keepAlive}
	return d.DialContext(ctx, "tcp", addr)
}

// run is the whole exchange over a blocking stream (the dial).
func (a *Auth) run(rw io.ReadWriter) error {
	out := a.Begin()
	for {
		if _, err := rw.Write(out); err != nil {
			return fmt.Errorf("SASL exchange: %w", err)
		}
		var head [4]byte
		if _, err := io.ReadFull(rw, head[:]); err != nil {
			if a.key == kmsg.SASLAuthenticate.Int16() && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
				// Some brokers close rather than answer a refusal.
				return &AuthError{Upstream: a.upstream, Msg: "the broker closed the connection at SaslAuthenticate"}
			}
			return fmt.Errorf("SASL exchange: %w", err)
		}
		size := int32(binary.BigEndian.Uint32(head[:]))
		if size < 4 || size > maxAuthAnswer {
			return fmt.Errorf("SASL exchange: an answer of %d bytes", size)
		}
		ans := make([]byte, size)
		if _, err := io.ReadFull(rw, ans); err != nil {
			return fmt.Errorf("SASL exchange: %w", err)
		}
		next, done, err := a.Next(ans)
		if err != nil || done {
			return err
		}
		out = next
	}
}

// swapConn is the net.Conn under a broker's tls.Conn: the socket during
// the dial, the event loop's buffers after HandOff (the socket then
// belongs to the loop: gnet enrolled a duplicate of it and closed ours).
type swapConn struct {
	net.Conn
	mu   sync.Mutex
	loop LoopIO
}

func (s *swapConn) handOff(io LoopIO) {
	s.mu.Lock()
	s.loop = io
	s.mu.Unlock()
}

func (s *swapConn) cur() LoopIO {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loop
}

func (s *swapConn) Read(p []byte) (int, error) {
	if l := s.cur(); l != nil {
		return l.Read(p)
	}
	return s.Conn.Read(p)
}

func (s *swapConn) Write(p []byte) (int, error) {
	if l := s.cur(); l != nil {
		return l.Write(p)
	}
	return s.Conn.Write(p)
}

func (s *swapConn) Close() error {
	if s.cur() != nil {
		return nil // the loop closes its own socket
	}
	return s.Conn.Close()
}

func (s *swapConn) SetDeadline(t time.Time) error {
	if s.cur() != nil {
		return nil
	}
	return s.Conn.SetDeadline(t)
}

func (s *swapConn) SetReadDeadline(t time.Time) error {
	if s.cur() != nil {
		return nil
	}
	return s.Conn.SetReadDeadline(t)
}

func (s *swapConn) SetWriteDeadline(t time.Time) error {
	if s.cur() != nil {
		return nil
	}
	return s.Conn.SetWriteDeadline(t)
}
