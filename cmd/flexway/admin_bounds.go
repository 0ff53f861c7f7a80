package main

// The admin endpoint's bounds (O4, L3; issue 33.2): it is a scrape and
// probe endpoint, read by a handful of clients (Prometheus, a health check,
// a browser on the status page), and it must never take from the Kafka
// port what the Kafka port needs: descriptors, goroutines, memory.
//
//   - Timeouts: a request's header within 5 s, the whole request within
//     10 s, its answer written within 30 s (Prometheus's scrape_timeout is
//     10 s by default), and a keep-alive connection left idle 30 s is
//     closed (a scraper at the usual 15 s keeps its connection; a slower
//     one dials again, which Go's and Prometheus's clients do unseen).
//   - At most adminMaxConnections connections open at once. One accepted
//     beyond is closed at once (its client reads EOF or a reset), never
//     held, never left queued: netutil.LimitListener stops accepting
//     instead, so a scraper beyond the bound hangs until its own timeout
//     and nothing says why; here it fails at once and a line says so.
//   - Only GET and HEAD, on every path: anything else is 405 with
//     `Allow: GET, HEAD` (the endpoint changes nothing).
//
// The same server serves at start and after a reload moves the endpoint
// (admin.serve is the one place it is made).

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/engine/signals"
)

const (
	adminReadHeaderTimeout = 5 * time.Second
	adminReadTimeout       = 10 * time.Second
	adminWriteTimeout      = 30 * time.Second
	adminIdleTimeout       = 30 * time.Second
	// adminMaxHeaderBytes bounds a request's header (Go's default is 1 MiB):
	// a scraper's takes a few hundred bytes.
	adminMaxHeaderBytes = 16 << 10
	// adminMaxConnections is fixed, not a share of RLIMIT_NOFILE: the
	// endpoint's readers are few and the figure is one an operator can
	// read in the README. At a 1,024-descriptor limit it leaves 958 to the
	// Kafka port; under the unit's LimitNOFILE (1,048,576) it is nothing.
	adminMaxConnections = 64
)

// newAdminServer is the admin endpoint's server, its timeouts set; what
// net/http has to say (an accept failing) goes to log, as JSON lines.
func newAdminServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		Handler:           h,
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeaderBytes,
		// `OPTIONS *` reaches readOnly too (net/http answers it 200 by itself).
		DisableGeneralOptionsHandler: true,
	}
}

// readOnly refuses every method but GET and HEAD with 405, on every path.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the admin endpoint answers GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// capListener hands out at most max connections open at once; one
// accepted beyond is closed before Accept returns. Safe for concurrent use.
type capListener struct {
	net.Listener
	max   int64
	open  atomic.Int64
	log   *slog.Logger
	lines *signals.RateLimiter // the refusal line, once a second at most
	addr  string
}

func newCapListener(ln net.Listener, max int, log *slog.Logger, addr string) *capListener {
	return &capListener{Listener: ln, max: int64(max), log: log, lines: signals.NewRateLimiter(1), addr: addr}
}

// Accept returns the next connection within the bound.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &capConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		_ = c.Close()
		l.lines.Line(l.log, slog.LevelWarn, "admin endpoint connection refused: its connections are at their bound",
			"address", l.addr, "max_connections", l.max)
	}
}

// capConn gives its place back when it is closed, once: before its
// descriptor is closed, so that a client told of the close (its FIN) finds
// the place free. Connections being closed may pass the bound by
// themselves for that instant.
type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *capConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// CloseWrite keeps net/http's orderly close of a connection whose request
// it did not read whole (a 405 with a body).
func (c *capConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
