package session

// TLS on the reactor (L1, L4). gnet has no TLS: the standard crypto/tls
// runs over an adapter net.Conn.
//
//   - SNI is read on the loop from the ClientHello (looptls.ParseSNI)
//     before any worker is spent: a name that is no declared cluster is
//     closed at once.
//   - The handshake runs on a worker goroutine (a handshake cannot resume
//     after an error, so it cannot run on the loop): the adapter's Read
//     waits for bytes the loop copies in, its Write uses AsyncWrite.
//   - After the handshake the record layer runs on the loop: the adapter
//     reads gnet's buffer and answers "would block" (a temporary net.Error,
//     which tls.Conn does not remember: pinned by TestTLSTemporaryErrorNotSticky)
//     when it is empty. Decrypted bytes go to the client's plaintext buffer,
//     framed as on a plaintext port.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/looptls"
	"github.com/flexway/flexway/engine/signals"
)

// clientTLS is a client's TLS after the handshake: its record layer on
// the loop (engine/looptls).
type clientTLS struct {
	io    *looptls.IO
	rec   *looptls.Record
	ended bool // the client's close_notify was read (tlsRead)
}

// routeSNI maps an SNI name to a cluster and node: bootstrap.<cluster>.<domain>
// or broker-<id>.<cluster>.<domain>.
func (env *Env) routeSNI(name string) (Route, bool) {
	snap := env.Snap.Load()
	domain := "." + strings.ToLower(snap.Listener.SNIDomain)
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if !strings.HasSuffix(name, domain) {
		return Route{}, false
	}
	rest := strings.TrimSuffix(name, domain)
	i := strings.IndexByte(rest, '.')
	if i < 0 {
		return Route{}, false
	}
	host, cluster := rest[:i], rest[i+1:]
	cl := snap.Clusters[cluster]
	if cl == nil {
		return Route{}, false
	}
	if host == "bootstrap" {
		return Route{Cluster: cl, Node: -1, TLS: true}, true
	}
	if id, ok := strings.CutPrefix(host, "broker-"); ok {
		n, err := strconv.ParseInt(id, 10, 32)
		if err == nil && n >= 0 {
			return Route{Cluster: cl, Node: int32(n), TLS: true}, true
		}
	}
	return Route{}, false
}

// onTLSHello handles the first bytes of a TLS client: route by SNI, then
// start the handshake in the worker pool.
func (cl *authn) onTLSHello() {
	const preAuthMax = int(configs.UnauthenticatedMaxRequestBytes)
	n := min(cl.c.Buffered(), preAuthMax)
	b, err := cl.c.Peek(n)
	if err != nil {
		return
	}
	name, err := looptls.ParseSNI(b)
	if errors.Is(err, looptls.ErrHelloIncomplete) {
		if n >= preAuthMax {
			cl.client().close(signals.CloseHelloTooLarge)
		}
		return
	}
	if err != nil {
		cause := "no SNI name"
		if errors.Is(err, looptls.ErrNotTLS) {
			cause = "a plaintext client on the TLS port"
		}
		cl.client().close(signals.CloseBadHello, "cause", cause)
		return
	}
	route, ok := cl.env.routeSNI(name)
	if !ok {
		cl.client().close(signals.CloseUnknownSNI, "sni", name)
		return
	}
	if cl.env.RefusedCluster(route.Cluster) { // U3, logged there
		cl.client().close(signals.CloseSameCluster)
		return
	}
	cl.route = route
	cl.client().auditor().setSeries(cl.env.Signals.Tenant(route.Cluster.Name, ""), signals.MechNone)
	ad := looptls.NewIO(cl.c, cl.c.LocalAddr(), cl.c.RemoteAddr(), false)
	cl.auth.tlsHS = ad
	cl.client().flow().feedHandshake()
	conn := tls.Server(ad, cl.env.Sec.TLSConfig)
	deadline := cl.clock.opened.Time().Add(cl.snap.Listener.AuthTimeout.D())
	err = cl.env.Pools.Handshake.Submit(func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		herr := conn.HandshakeContext(ctx)
		cancel()
		_ = cl.lp.RunFor("tls", cl, func() {
			switch {
			case !cl.closed:
				cl.tlsDone(conn, ad, herr)
			case herr != nil && !errors.Is(herr, net.ErrClosed) && !errors.Is(herr, context.DeadlineExceeded):
				// A TLS 1.3 client ends its side before the gateway judges
				// its certificate, and may have closed since: still refused.
				cl.env.closingFor(signals.CloseHandshake, cl.ts, cl.handshakeAttrs(herr))
			}
		})
	})
	if err != nil {
		cl.client().close(signals.CloseHandshakePool)
	}
}

// handshakeAttrs are a failed handshake's line's pairs.
func (cl *authn) handshakeAttrs(herr error) []any {
	return []any{"error", herr.Error(), "cluster", cl.route.Cluster.Name}
}

// tlsDone runs on the loop when the handshake ends.
func (cl *authn) tlsDone(conn *tls.Conn, ad *looptls.IO, herr error) {
	if herr != nil {
		cl.client().close(signals.CloseHandshake, cl.handshakeAttrs(herr)...)
		return
	}
	ad.OnLoop()
	cl.auth.tls = &clientTLS{io: ad, rec: looptls.NewRecord(conn)}
	cl.auth.tlsHS = nil
	if st := conn.ConnectionState(); len(st.PeerCertificates) > 0 {
		cl.certAuth(st.PeerCertificates[0])
		if cl.closed {
			return
		}
	}
	cl.tlsRead()
	cl.client().process()
	cl.client().tlsEnded()
}

// tlsRead decrypts what the socket holds into the plaintext buffer. A
// close_notify ends the client's side as a FIN does: what it sent before
// is processed first, then tlsEnded closes (invariant 11).
func (cl *authn) tlsRead() {
	err := cl.auth.tls.rec.Pump()
	if err == nil || cl.closed {
		return
	}
	if errors.Is(err, io.EOF) {
		cl.auth.tls.ended = true
		return
	}
	cl.env.Log.Info("kafka connection closed: TLS error", "cluster", cl.route.Cluster.Name, "error", err.Error())
	cl.client().close(signals.CloseTLSRead)
}

// tlsEnded closes a client whose close_notify was read, once what came
// before it was processed: as gnet closes a socket at its FIN, what the
// client sent and is still owed to the broker kept (invariant 11).
func (cl *Client) tlsEnded() {
	if t := cl.auth.tls; t == nil || !t.ended || cl.closed {
		return
	}
	cl.env.closingFor(signals.CloseTLSRead, cl.ts, nil)
	cl.flushOwn(false)
	cl.c.Close()
	cl.releaseAs(true)
}

// certAuth authenticates a verified client certificate (I3): declared in
// auth.mtls.clients by subject, no SASL handshake.
func (cl *authn) certAuth(cert *x509.Certificate) {
	snap := cl.env.Snap.Load()
	res := auth.MatchCert(snap, cert)
	cl.auth.mech = mechCert
	if res.ID == nil {
		cl.client().auditor().auditAuthRefused(&res)
		cl.client().close(signals.CloseCertUnknown, "cause", res.Cause, "cluster", cl.route.Cluster.Name, "mechanism", mechCert)
		return
	}
	cl.authDone(res, nil, authCert, snap)
}
