package upstream

import (
	"context"
	"net"
	"time"
)

// keepAlive is the TCP keep-alive period of a broker connection.
const keepAlive = 30 * time.Second

// Dial opens a connection to addr, a broker's address as Addr returned it,
// within the upstream's timeout (upstreams.<name>.timeout). The connection
// is ready for Kafka requests: the caller owns it (the engine enrolls it on
// its client's event loop). Dial blocks: call it off the event loops.
func (u *Upstream) Dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: u.cfg.Timeout.D(), KeepAlive: keepAlive}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	// TLS and SASL towards the brokers (issue 9) are steps of this dial,
	// before the connection is handed over and within the same timeout
	// (the key's documented meaning: "a connection to a broker, TLS and
	// SASL included"). Until then configs refuses upstreams.<name>.tls and
	// .sasl at load, and the connection is plain TCP.
	return nc, nil
}
