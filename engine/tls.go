package engine

// TLS on the reactor (L1, L4). gnet has no TLS: the standard crypto/tls
// runs over an adapter net.Conn.
//
//   - SNI is read on the loop from the ClientHello (parseSNI, sni.go)
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
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/looptls"
	"github.com/flexway/flexway/engine/signals"
	"github.com/panjf2000/gnet/v2"
)

// clientTLS is a client's TLS after the handshake: its record layer on
// the loop (engine/looptls).
type clientTLS struct {
	io  *looptls.IO
	rec *looptls.Record
}

// buildServerTLS makes the listener's tls.Config (start-only, S1).
func buildServerTLS(l *configs.KafkaListener) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(l.TLS.CertFile, l.TLS.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: listeners.kafka.tls: %v", ErrEngineConfig, err)
	}
	cfg := &tls.Config{
		Certificates:                []tls.Certificate{cert},
		MinVersion:                  tls.VersionTLS12,
		DynamicRecordSizingDisabled: true,
	}
	if l.TLS.ClientCAFile != "" {
		pem, err := os.ReadFile(l.TLS.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: listeners.kafka.tls.client_ca_file: %v", ErrEngineConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: listeners.kafka.tls.client_ca_file: no certificate", ErrEngineConfig)
		}
		cfg.ClientCAs = pool
		// SASL clients present no certificate; a certificate, when given, must verify.
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// routeSNI maps an SNI name to a cluster and node: bootstrap.<cluster>.<domain>
// or broker-<id>.<cluster>.<domain>.
func (e *Engine) routeSNI(name string) (portRoute, bool) {
	snap := e.snap.Load()
	domain := "." + strings.ToLower(snap.Listener.SNIDomain)
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if !strings.HasSuffix(name, domain) {
		return portRoute{}, false
	}
	rest := strings.TrimSuffix(name, domain)
	i := strings.IndexByte(rest, '.')
	if i < 0 {
		return portRoute{}, false
	}
	host, cluster := rest[:i], rest[i+1:]
	cl := snap.Clusters[cluster]
	if cl == nil {
		return portRoute{}, false
	}
	if host == "bootstrap" {
		return portRoute{cluster: cl, node: -1, tls: true}, true
	}
	if id, ok := strings.CutPrefix(host, "broker-"); ok {
		n, err := strconv.ParseInt(id, 10, 32)
		if err == nil && n >= 0 {
			return portRoute{cluster: cl, node: int32(n), tls: true}, true
		}
	}
	return portRoute{}, false
}

// onTLSHello handles the first bytes of a TLS client: route by SNI, then
// start the handshake in the worker pool.
func (cl *client) onTLSHello() {
	const preAuthMax = int(configs.UnauthenticatedMaxRequestBytes)
	n := min(cl.c.Buffered(), preAuthMax)
	b, err := cl.c.Peek(n)
	if err != nil {
		return
	}
	name, err := parseSNI(b)
	if errors.Is(err, errHelloIncomplete) {
		if n >= preAuthMax {
			cl.close(signals.CloseHelloTooLarge)
		}
		return
	}
	if err != nil {
		cause := "no SNI name"
		if errors.Is(err, errNotTLS) {
			cause = "a plaintext client on the TLS port"
		}
		cl.close(signals.CloseBadHello, "cause", cause)
		return
	}
	route, ok := cl.e.routeSNI(name)
	if !ok {
		cl.close(signals.CloseUnknownSNI, "sni", name)
		return
	}
	if cl.e.refusedCluster(route.cluster) { // U3, logged there
		cl.close(signals.CloseSameCluster)
		return
	}
	cl.route = route
	cl.setSeries(cl.e.m.Tenant(route.cluster.Name, ""), signals.MechNone)
	ad := looptls.NewIO(cl.c, cl.c.LocalAddr(), cl.c.RemoteAddr(), false)
	all, _ := cl.c.Peek(cl.c.Buffered())
	ad.Feed(all) // copied: gnet's buffer is the loop's
	cl.c.Discard(len(all))
	cl.auth.tlsHS = ad
	conn := tls.Server(ad, cl.e.sec.tlsConfig)
	deadline := cl.clock.opened.Add(cl.snap.Listener.AuthTimeout.D())
	el := cl.c.EventLoop()
	err = cl.e.pools.handshake.Submit(func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		herr := conn.HandshakeContext(ctx)
		cancel()
		_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer cl.lp.fc.Settle()
			defer cl.e.recoverConn(cl.c, "tls")
			if cl.closed {
				return nil
			}
			cl.tlsDone(conn, ad, herr)
			return nil
		}))
	})
	if err != nil {
		cl.close(signals.CloseHandshakePool)
	}
}

// tlsDone runs on the loop when the handshake ends.
func (cl *client) tlsDone(conn *tls.Conn, ad *looptls.IO, herr error) {
	if herr != nil {
		cl.close(signals.CloseHandshake, "error", herr.Error(), "cluster", cl.route.cluster.Name)
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
	cl.process()
}

// tlsRead decrypts what the socket holds into the plaintext buffer.
func (cl *client) tlsRead() {
	err := cl.auth.tls.rec.Pump()
	if err == nil || cl.closed {
		return
	}
	if !errors.Is(err, io.EOF) { // a close_notify is a normal close
		cl.e.log.Info("kafka connection closed: TLS error", "cluster", cl.route.cluster.Name, "error", err.Error())
	}
	cl.close(signals.CloseTLSRead)
}

// certAuth authenticates a verified client certificate (I3): declared in
// auth.mtls.clients by subject, no SASL handshake.
func (cl *client) certAuth(cert *x509.Certificate) {
	snap := cl.e.snap.Load()
	res := auth.MatchCert(snap, cert)
	if res.ID == nil {
		cl.close(signals.CloseCertUnknown, "cause", res.Cause, "cluster", cl.route.cluster.Name, "mechanism", "mtls")
		return
	}
	cl.auth.mech = "mtls"
	cl.authDone(res, nil, authCert, snap)
}
