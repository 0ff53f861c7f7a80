package session

// TLS and SASL on a client's broker connection (U1, U2, issue 9).
//
//   - The dial goroutine (upstream.Dial) runs the TLS handshake and the
//     SASL exchange on the blocking socket, within the upstream's timeout,
//     before the socket is enrolled: client requests wait in the client's
//     buffer meanwhile, in order, as they wait for any dial.
//   - Once enrolled, the TLS record layer runs on the loop (engine/looptls):
//     what the socket holds is decrypted into a plaintext buffer that
//     peek and discard serve, what send is given is encrypted. The
//     tls.Conn's own socket is swapped for the loop's (upstream.Conn.HandOff)
//     in OnOpen, before any read or write there.
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
	"errors"
	"io"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/looptls"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/upstream"
	"github.com/panjf2000/gnet/v2"
)

// upSecure is a broker connection's TLS and SASL state (nil: clear text
// and no SASL).
type upSecure struct {
	conn    *upstream.Conn
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

// attach runs in OnOpen: the broker connection's handle, and under TLS
// its record layer on the loop (the tls.Conn's own socket swapped for the
// loop's, upstream.Conn.HandOff, before any read or write there).
func (u *upstreamConn) attach(gc gnet.Conn) {
	high, low := u.cl.env.marks()
	u.c = conn.Open(u.cl.lp.fc, gc, u, high, low)
	s := u.sec
	if s == nil || s.conn.TLS() == nil {
		return
	}
	s.conn.HandOff(looptls.NewIO(u.c, u.c.LocalAddr(), u.c.RemoteAddr(), true))
	u.rec = looptls.NewRecord(s.conn.TLS())
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
	u.cl.up.state = upDialing // the client forwards nothing until it is done
	u.renewIfIdle()
	return true
}

// renewIfIdle starts the exchange once nothing is in flight.
func (u *upstreamConn) renewIfIdle() {
	s := u.sec
	if s == nil || s.renewal != renewWaiting || u.fs != nil || u.cl.queue.Len() > 0 || u.closed {
		return
	}
	up := u.cl.env.Upstream(u.cl.route.Cluster.Upstream)
	s.auth = nil
	if up != nil { // nil: a reload removed it; its clusters' connections are closing
		s.auth = up.NewAuth(s.addr)
	}
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
	gen, cl := s.gen, u.cl
	time.AfterFunc(up.Config().Timeout.D(), func() {
		_ = cl.lp.RunFor("upstream sasl", cl, func() {
			if !u.closed && s.gen == gen && s.renewal >= renewExchange {
				u.renewFailed(errors.New("no answer to the re-authentication within the upstream's timeout"))
			}
		})
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
	n := u.buffered()
	if n < codec.SizeLen {
		return true
	}
	hb, _ := u.peek(codec.SizeLen)
	size := codec.FrameSize(hb)
	if size < 4 || size > 1<<20 {
		u.renewFailed(errors.New("SASL exchange: an answer of unexpected size"))
		return true
	}
	total := codec.SizeLen + int(size)
	if n < total {
		return true
	}
	b, _ := u.peek(total)
	ans := append([]byte(nil), b[codec.SizeLen:]...)
	u.discard(total)
	s.renewal = renewComputing
	a, cl := s.auth, u.cl
	go func() {
		next, done, err := a.Next(ans)
		_ = cl.lp.RunFor("upstream sasl", cl, func() { u.authStep(next, done, err) })
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
	cl.up.state = upReady
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
func (cl *Client) upAuthFailed(err error, when string, attrs ...any) {
	cl.close(signals.CloseUpstreamAuth, append([]any{"upstream", cl.route.Cluster.Upstream, "cluster", cl.route.Cluster.Name,
		"when", when, "error", err.Error()}, attrs...)...)
}

// The broker connection's byte stream: its socket in clear text, the
// plaintext of its record layer under TLS.

// buffered is what may be read now; under TLS what the socket holds is
// decrypted first (a broken record layer closes the connection).
func (u *upstreamConn) buffered() int {
	if u.rec == nil {
		return u.c.Buffered()
	}
	if err := u.rec.Pump(); err != nil && !u.closed {
		if !errors.Is(err, io.EOF) && !u.cl.closed {
			u.cl.env.Log.Info("kafka upstream TLS error", "upstream", u.cl.route.Cluster.Upstream,
				"cluster", u.cl.route.Cluster.Name, "error", err.Error())
		}
		u.c.Close()
	}
	return u.rec.Buffered()
}

func (u *upstreamConn) peek(n int) ([]byte, error) {
	if u.rec == nil {
		return u.c.Peek(n)
	}
	return u.rec.Peek(n)
}

func (u *upstreamConn) discard(n int) {
	if u.rec == nil {
		u.c.Discard(n)
		return
	}
	u.rec.Discard(n)
}

// send writes bs to the broker (encrypted under TLS), after what waits.
func (u *upstreamConn) send(bs [][]byte) {
	if u.rec == nil {
		_ = u.c.Writev(bs)
		return
	}
	_ = u.rec.Writev(bs)
}

// upstreamRefused reports whether the brokers of upstream name refuse the
// gateway's credentials at the moment (upstream.Upstream.Refused).
func (env *Env) upstreamRefused(name string) bool {
	u := env.Upstream(name)
	return u != nil && u.Refused()
}
