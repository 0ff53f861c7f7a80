package testkit

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// FreePort is a TCP port free on every interface a moment ago: chosen by
// the kernel (a listener on :0), then closed for the test's server to take.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)
}

// FreePorts is the first of n consecutive TCP ports free on every
// interface (a plaintext fallback range, a port per broker). They lie
// below the kernel's ephemeral range (32768 and up): a port there can be
// taken by any process's outgoing connection between this probe and the
// gateway's bind (issue 13.5).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for try := 0; try < 200; try++ {
		base := 20000 + rand.IntN(12000-n)
		ok := true
		for i := 0; ok && i < n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf(":%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports below 32768", n)
	return 0
}

// LoopbackDialer dials 127.0.0.1 at the port of the address asked,
// whatever its host: every name a gateway announces (an SNI name, a mesh
// Service) reaches the gateway on loopback, as DNS would send it to the
// gateway. With cfg, it then speaks TLS, with the host asked as the SNI
// name (cfg.ServerName unless set). Use it as franz-go's kgo.Dialer.
func LoopbackDialer(cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		raw, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil || cfg == nil {
			return raw, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		tc := tls.Client(raw, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return tc, nil
	}
}
