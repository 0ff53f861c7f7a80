package engine

// Issue 11.2, the broker side of a pause and what surrounds it: a paused
// broker connection holds its answers until the resume, Engine.Stop closes
// paused sockets, large answers go out paused or not, and a TLS client
// pauses too.

import (
	"context"
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/engine/conn"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 11.2: the broker side pauses too: its answer waits in the kernel
// until the resume, which enrolls it on its client's loop again
// (invariant 1).
func TestPauseBrokerConnection(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	r.apiVersions() // not forwarded: dial the broker with a Fetch first
	r.apiVersionsAnswer()
	r.send(emptyFetch(0))
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	var p *conn.Conn
	onLoopOf(t, cl, func() {
		p = pauseUp(cl) // under TLS, the socket below the record layer
	})
	answerWaitsWhilePaused(t, r, cl, p, &resp)
	onLoopOf(t, cl, func() {
		if p.EventLoop() != cl.Conn().EventLoop() {
			t.Error("the broker connection came back on another loop")
		}
	})
}

// Issue 11.2: Engine.Stop closes the sockets of paused connections (the
// peer sees the close) and releases their clients.
func TestStopClosesPausedSockets(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	p := pauseClient(t, cl)
	var sock string
	onLoopOf(t, cl, func() { sock = openFds(t)[p.Fd()] })
	if !strings.HasPrefix(sock, "socket:") {
		t.Fatalf("the paused descriptor is %q", sock)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = env.e.Stop(ctx)
	for fd, l := range openFds(t) {
		if l == sock {
			t.Fatalf("the paused socket is still open (fd %d)", fd)
		}
	}
	r.expectClosed(5 * time.Second)
	if !cl.State().Gone || stateOf(p) != rpClosed || !p.Closed() {
		t.Fatalf("not released: client closed %v, pause state %d", cl.State().Gone, stateOf(p))
	}
	if g := env.e.env.Signals.Connections(); g != 0 {
		t.Fatalf("connections gauge %d after stop", g)
	}
}

// Issue 11.2: what the gateway wrote goes out, paused or not: a client's
// unsent answers are its Conn's own queue (issue 11.3), not gnet's, so
// the pause does not wait for a flush; what it writes while paused goes
// out too, past the kernel's buffers (the drain watcher). Answers through
// the loop's buffer: spliced records wait in the broker's socket instead
// (invariant 42), and the subject here is the answers the gateway holds.
func TestPauseAndLargeAnswers(t *testing.T) {
	env := newTestEnv(t, "", noSplice())
	fillOrders(t, env, 80) // 8 MiB on orders/0
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)

	const fetches = 16
	p, n := pausedWithUnsentAnswers(t, r, cl, fetches)
	resumeClient(t, cl, p)
	clearOfRenewal(t, cl, r, 20*time.Second)
	answeredWhilePaused(t, r, cl, p, fetches, n)
	resumeClient(t, cl, p)
	r.apiVersions()
	r.apiVersionsAnswer()
}

// pausedWithUnsentAnswers (TestPauseAndLargeAnswers, A): answers of
// megabytes the peer has not read, the pause is at once (at the safe point
// after the call, not after a flush); then the peer reads the fetches
// answers, each of the same size, n bytes, and the client is still
// paused. It returns the client's connection and n.
func pausedWithUnsentAnswers(t *testing.T, r *rawConn, cl *session.Client, fetches int) (*conn.Conn, int) {
	for i := 0; i < fetches; i++ {
		r.send(bigFetch())
	}
	waitUntil(t, 10*time.Second, "no answer waits in the gateway", func() bool {
		var out int
		onLoopOf(t, cl, func() { out = cl.Conn().Queued() })
		return out > 1<<20
	})
	var p *conn.Conn
	var st pauseState
	onLoopOf(t, cl, func() {
		cl.Conn().Pause(conn.Held)
		p = cl.Conn()
		cl.Conn().Loop().Settle() // the safe point (the end of a callback)
		st = stateOf(p)
	})
	if st != rpPaused {
		t.Fatalf("pause state %d with unsent bytes, want paused", st)
	}
	n := 0
	for i := 0; i < fetches; i++ {
		resp := kmsg.FetchResponse{Version: 11}
		r.recv(&resp)
		if m := fetchedBytes(t, &resp); m == 0 || (n > 0 && m != n) {
			t.Fatalf("fetch %d: %d bytes (%d before)", i, m, n)
		} else {
			n = m
		}
	}
	waitState(t, cl, p, rpPaused)
	return p, n
}

// answeredWhilePaused (TestPauseAndLargeAnswers, B): the same answers
// written to the paused client p. The broker's side is paused first and
// the Fetches forwarded to it, then the client is paused and the broker's
// side resumed: the answers wait for the paused socket, and come, each of
// n bytes, the client still paused.
func answeredWhilePaused(t *testing.T, r *rawConn, cl *session.Client, p *conn.Conn, fetches, n int) {
	var up *conn.Conn
	onLoopOf(t, cl, func() {
		up = pauseUp(cl)
	})
	waitState(t, cl, up, rpPaused)
	for i := 0; i < fetches; i++ {
		r.send(bigFetch()) // forwarded to the paused broker socket: writes go on
	}
	waitUntil(t, 10*time.Second, "the Fetch was not forwarded", func() bool {
		var queued int
		onLoopOf(t, cl, func() { queued = cl.State().Requests })
		return queued == fetches
	})
	onLoopOf(t, cl, func() { cl.Conn().Pause(conn.Held) })
	waitState(t, cl, p, rpPaused)
	onLoopOf(t, cl, resume(up))
	waitUntil(t, 10*time.Second, "the answer did not wait for the paused socket", func() bool {
		var out int
		onLoopOf(t, cl, func() { out = p.Queued() })
		return out > 1<<20
	})
	for i := 0; i < fetches; i++ {
		resp := kmsg.FetchResponse{Version: 11}
		r.recv(&resp)
		if m := fetchedBytes(t, &resp); m != n {
			t.Fatalf("fetch %d: %d bytes while paused, %d before", i, m, n)
		}
	}
	var st pauseState
	onLoopOf(t, cl, func() { st = stateOf(p) })
	if st != rpPaused {
		t.Fatalf("pause state %d after the answer", st)
	}
}

// clearOfRenewal keeps a KIP-368 renewal of the client's broker session
// (the SASL_SSL test broker's sessions last 30 s) out of the next d: a
// test that pauses the broker connection's reads by hand would hold the
// renewal's answers, and the client's requests wait for the renewal. With
// one due within d, it waits for its time and has one request forwarded
// past it, which renews the session first.
func clearOfRenewal(t *testing.T, cl *session.Client, r *rawConn, d time.Duration) {
	t.Helper()
	var by time.Time
	onLoopOf(t, cl, func() {
		by = cl.State().RenewBy
	})
	if by.IsZero() || time.Until(by) > d {
		return
	}
	time.Sleep(time.Until(by) + 50*time.Millisecond)
	r.send(bigFetch())
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	var after time.Time
	onLoopOf(t, cl, func() { after = cl.State().RenewBy })
	if !after.After(by) {
		t.Fatalf("the broker session was not renewed (renew by %v, then %v)", by, after)
	}
}

// Issue 11.2: a TLS client pauses too: the record layer reads through its
// Conn (the handle never changes), what gnet had read of a record waits in
// the stash. A produce blocks while its connections are
// paused and completes after the resume.
func TestPauseTLSClient(t *testing.T) {
	te := newTLSEnv(t, "")
	// Every record to orders/0: no new connection after the first ones.
	cl := te.saslClient("acme-app", tls.VersionTLS13, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, cl, "orders", 2, "before")
	var paused []*conn.Conn
	var owners []*session.Client
	var mu sync.Mutex
	onLoops(t, te.e, func(l *session.Loop) {
		for c := range l.Clients() {
			if st := c.State(); !st.TLS || !st.Authed {
				continue
			}
			if p := pauseCl(c); p != nil {
				mu.Lock()
				paused, owners = append(paused, p), append(owners, c)
				mu.Unlock()
			}
		}
	})
	if len(paused) == 0 {
		t.Fatal("no TLS connection to pause")
	}
	for i, p := range paused {
		waitState(t, owners[i], p, rpPaused)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("while paused")}).FirstErr()
	}()
	select {
	case err := <-done:
		t.Fatalf("produced while every connection was paused (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	for i, p := range paused {
		onLoopOf(t, owners[i], resume(p))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	produceN(t, cl, "orders", 2, "after")
}
