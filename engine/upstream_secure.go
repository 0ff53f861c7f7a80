package engine

// TLS and SASL on a client's broker connection (U1, U2, issue 9).
//
//   - The dial goroutine (upstream.Dial) runs the TLS handshake and the
//     SASL exchange on the blocking socket, within the upstream's timeout,
//     before the socket is enrolled: client requests wait in the client's
//     buffer meanwhile, in order, as they wait for any dial.
//   - Once enrolled, the TLS record layer runs on the loop: upTLSConn stands
//     in for the gnet.Conn (the connection's handle u.c), decrypting what
//     gnet read into a plaintext buffer that Peek and Discard serve, and
//     encrypting what Writev is given. The tls.Conn's own socket is swapped
//     for the loop's buffers (upstream.Conn.HandOff) in OnOpen, before any
//     read or write there.
//   - KIP-368: a broker that announced a session lifetime gets a new
//     SaslHandshake + SaslAuthenticate before it ends. When a request is
//     about to be forwarded past the renewal time, the client stops
//     forwarding (its frames wait in its buffer, as during a dial), the
//     requests already forwarded are answered, and with nothing in flight
//     the exchange runs on the connection; then forwarding goes on. No
//     client request is lost or reordered, and no broker answer can be
//     mistaken for the exchange's. The mechanism's steps (SCRAM's key
//     derivation) run on a goroutine, their result back on the loop.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/upstream"
	"github.com/panjf2000/gnet/v2"
)

// upSecure is a broker connection's TLS and SASL state (nil: clear text
// and no SASL).
type upSecure struct {
	conn    *upstream.Conn
	tls     *upTLSConn     // nil in clear text
	addr    string         // the broker's address, for a renewal
	renewBy time.Time      // zero: no lifetime announced
	renewal renewalPhase   // KIP-368 renewal under way
	auth    *upstream.Auth // the renewal's exchange
	since   time.Time      // the renewal's start
	gen     int            // counts the exchanges: a timer knows its own
	renews  int            // renewals done (tests read it on the loop)
}

type renewalPhase uint8

const (
	renewNone      renewalPhase = iota
	renewWaiting                // new requests wait; those in flight are answered first
	renewExchange               // a SASL request is at the broker
	renewComputing              // the mechanism computes the next step off the loop
)

// newUpSecure keeps what the dial set up; nil when there is nothing.
func newUpSecure(conn *upstream.Conn, addr string) *upSecure {
	if conn.TLS() == nil && conn.Auth() == nil {
		return nil
	}
	s := &upSecure{conn: conn, addr: addr}
	if a := conn.Auth(); a != nil {
		s.renewBy = a.RenewBy()
	}
	return s
}

// attach runs in OnOpen: the handle the connection is used through, the
// TLS stand-in when there is TLS.
func (u *upstreamConn) attach(c gnet.Conn) gnet.Conn {
	s := u.sec
	if s == nil || s.conn.TLS() == nil {
		return c
	}
	t := &upTLSConn{Conn: c, tc: s.conn.TLS(), lio: &upLoopIO{gc: c}}
	s.conn.HandOff(t.lio)
	s.tls = t
	return t
}

// pauseReadsTLS pauses the socket under the TLS stand-in (pause.go): the
// stand-in keeps being the handle, and reads through the pause's.
func (u *upstreamConn) pauseReadsTLS() *pausedConn {
	t := u.sec.tls
	p := u.cl.e.pauseRead(t.Conn)
	t.Conn = p
	t.lio.gc = p
	return p
}

// mustRenew runs before a request is forwarded: true when the session
// must be renewed first (the request then waits in the client's buffer).
func (u *upstreamConn) mustRenew() bool {
	s := u.sec
	if s == nil || u.closed || u.draining {
		return false
	}
	if s.renewal != renewNone {
		return true
	}
	if s.renewBy.IsZero() || time.Now().Before(s.renewBy) {
		return false
	}
	s.renewal = renewWaiting
	s.since = time.Now()
	u.cl.upSt = upDialing // the client forwards nothing until it is done
	u.renewIfIdle()
	return true
}

// renewIfIdle starts the exchange once nothing is in flight.
func (u *upstreamConn) renewIfIdle() {
	s := u.sec
	if s == nil || s.renewal != renewWaiting || u.fs != nil || u.cl.queue.Len() > 0 || u.closed {
		return
	}
	up := u.cl.e.upstreams[u.cl.route.cluster.Upstream]
	s.auth = up.NewAuth(s.addr)
	if s.auth == nil { // SASL removed at a reload: the session stays as it is
		s.renewBy = time.Time{}
		u.renewed()
		return
	}
	s.renewal = renewExchange
	s.gen++
	// A broker that does not answer within the upstream's timeout (a
	// dial's bound, SASL included) fails the renewal: the client's
	// requests never wait without end.
	gen, el, cl := s.gen, u.c.EventLoop(), u.cl
	time.AfterFunc(up.Config().Timeout.D(), func() {
		_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer cl.e.recoverConn(nil, "upstream sasl")
			if !u.closed && s.gen == gen && s.renewal >= renewExchange {
				u.renewFailed(errors.New("no answer to the re-authentication within the upstream's timeout"))
			}
			return nil
		}))
	})
	u.write([][]byte{s.auth.Begin()})
}

// authTraffic reads the answers of the renewal's exchange; false when the
// connection is not in one (its traffic is the client's).
func (u *upstreamConn) authTraffic() bool {
	s := u.sec
	if s == nil || (s.renewal != renewExchange && s.renewal != renewComputing) {
		return false
	}
	if s.renewal == renewComputing || u.closed {
		return true
	}
	n := u.c.InboundBuffered()
	if n < codec.SizeLen {
		return true
	}
	hb, _ := u.c.Peek(codec.SizeLen)
	size := codec.FrameSize(hb)
	if size < 4 || size > 1<<20 {
		u.renewFailed(errors.New("SASL exchange: an answer of unexpected size"))
		return true
	}
	total := codec.SizeLen + int(size)
	if n < total {
		return true
	}
	b, _ := u.c.Peek(total)
	ans := append([]byte(nil), b[codec.SizeLen:]...)
	_, _ = u.c.Discard(total)
	s.renewal = renewComputing
	a, el, cl := s.auth, u.c.EventLoop(), u.cl
	go func() {
		next, done, err := a.Next(ans)
		_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer cl.e.recoverConn(nil, "upstream sasl")
			u.authStep(next, done, err)
			return nil
		}))
	}()
	return true
}

// authStep runs on the loop with the mechanism's next step.
func (u *upstreamConn) authStep(next []byte, done bool, err error) {
	s := u.sec
	if u.closed || s.renewal != renewComputing {
		return
	}
	switch {
	case err != nil:
		u.renewFailed(err)
	case done:
		s.renewBy = s.auth.RenewBy()
		s.renews++
		u.renewed()
	default:
		s.renewal = renewExchange
		u.write([][]byte{next})
		u.authTraffic() // the answer may be buffered already
	}
}

// renewed: the client forwards again, beginning with what waited.
func (u *upstreamConn) renewed() {
	s := u.sec
	s.renewal, s.auth = renewNone, nil
	cl := u.cl
	if cl.closed {
		if u.draining {
			u.drainOrphans()
		}
		return
	}
	cl.upSt = upReady
	cl.process()
}

// renewFailed closes the client: its session cannot go on at the broker.
func (u *upstreamConn) renewFailed(err error) {
	cl := u.cl
	if cl.closed {
		u.closeFromClient()
		return
	}
	u.cl.upAuthFailed(err, "renewal")
}

// upAuthFailed logs a refusal of the gateway's credentials by a broker
// and closes the client (the broker's message, never the password).
func (cl *client) upAuthFailed(err error, when string, attrs ...any) {
	cl.close(signals.CloseUpstreamAuth, append([]any{"upstream", cl.route.cluster.Upstream, "cluster", cl.route.cluster.Name,
		"when", when, "error", err.Error()}, attrs...)...)
}

// upLoopIO is the byte stream under an enrolled broker connection's
// tls.Conn: gnet's buffers, on the loop.
type upLoopIO struct {
	gc gnet.Conn
}

func (a *upLoopIO) Read(p []byte) (int, error) {
	n := a.gc.InboundBuffered()
	if n == 0 {
		return 0, errWouldBlock
	}
	n = min(n, len(p))
	b, err := a.gc.Peek(n)
	if err != nil {
		return 0, errWouldBlock
	}
	copy(p, b)
	_, _ = a.gc.Discard(n)
	return n, nil
}

func (a *upLoopIO) Write(p []byte) (int, error) { return a.gc.Write(p) }

// upTLSConn stands in for a broker connection's gnet.Conn under TLS: its
// inbound calls serve the decrypted bytes, its writes are encrypted. The
// plaintext held is what gnet read and the owner did not consume, as in
// clear text. On the loop only.
type upTLSConn struct {
	gnet.Conn // the socket: gnet's connection, or its pause stand-in
	tc        *tls.Conn
	lio       *upLoopIO
	plain     []byte // decrypted: plain[off:] not consumed yet
	off       int
	out       []byte // scratch: the plaintext of one vectored write
	failed    bool
}

// pump decrypts everything gnet holds.
func (t *upTLSConn) pump() {
	for !t.failed {
		if t.off > 0 && t.off == len(t.plain) {
			t.plain, t.off = t.plain[:0], 0
		}
		if cap(t.plain)-len(t.plain) < 16<<10 {
			// A new buffer: slices peeked before stay as they were.
			np := make([]byte, len(t.plain)-t.off, 2*(len(t.plain)-t.off)+32<<10)
			copy(np, t.plain[t.off:])
			t.plain, t.off = np, 0
		}
		n, err := t.tc.Read(t.plain[len(t.plain):cap(t.plain)])
		t.plain = t.plain[:len(t.plain)+n]
		if err != nil {
			var ne interface{ Temporary() bool }
			if errors.As(err, &ne) && ne.Temporary() {
				return
			}
			t.failed = true
			if !errors.Is(err, io.EOF) {
				if u, ok := t.owner(); ok && !u.cl.closed {
					u.cl.e.log.Info("kafka upstream TLS error", "upstream", u.cl.route.cluster.Upstream,
						"cluster", u.cl.route.cluster.Name, "error", err.Error())
				}
			}
			_ = t.Conn.Close()
			return
		}
		if n == 0 {
			return
		}
	}
}

func (t *upTLSConn) owner() (*upstreamConn, bool) {
	ctx := t.Conn.Context()
	if p, ok := ctx.(*pausedConn); ok {
		ctx = p.ctx
	}
	u, ok := ctx.(*upstreamConn)
	return u, ok
}

func (t *upTLSConn) InboundBuffered() int {
	t.pump()
	return len(t.plain) - t.off
}

func (t *upTLSConn) Peek(n int) ([]byte, error) {
	avail := t.plain[t.off:]
	if n < 0 || n > len(avail) {
		if n < 0 {
			return avail, nil
		}
		return avail, io.ErrShortBuffer
	}
	return avail[:n:n], nil
}

func (t *upTLSConn) Discard(n int) (int, error) {
	avail := len(t.plain) - t.off
	if n <= 0 || n > avail {
		n = avail
	}
	t.off += n
	return n, nil
}

func (t *upTLSConn) Next(n int) ([]byte, error) {
	b, err := t.Peek(n)
	_, _ = t.Discard(len(b))
	return b, err
}

func (t *upTLSConn) Read(p []byte) (int, error) {
	t.pump()
	n := copy(p, t.plain[t.off:])
	t.off += n
	return n, nil
}

func (t *upTLSConn) Write(p []byte) (int, error) { return t.tc.Write(p) }

func (t *upTLSConn) Writev(bs [][]byte) (int, error) {
	t.out = t.out[:0]
	for _, b := range bs {
		t.out = append(t.out, b...)
	}
	n, err := t.tc.Write(t.out)
	if cap(t.out) > 1<<20 {
		t.out = nil // a large request's scratch is not kept
	}
	return n, err
}

// updateUpstreams reads again, at a reload, the TLS files and the SASL
// password of every upstream started: the next dial and the next renewal
// use them (configs.Load has read the password's file).
func (e *Engine) updateUpstreams(snap *configs.Snapshot) error {
	for name, u := range e.upstreams {
		cfg := snap.Upstreams[name]
		if cfg == nil {
			continue
		}
		if err := u.Update(cfg); err != nil {
			return fmt.Errorf("%w: %w", ErrEngineConfig, err)
		}
	}
	return nil
}

// upstreamRefused reports whether the brokers of upstream name refuse the
// gateway's credentials at the moment (upstream.Upstream.Refused).
func (e *Engine) upstreamRefused(name string) bool {
	u := e.upstreams[name]
	return u != nil && u.Refused()
}
