package engine

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker the gateway cannot reach: the client whose request needed it is
// reset unanswered (a transient cause before its first answer: franz-go
// retries a reset, where an orderly close would fail its records as a
// misconfiguration), the failed dial logged with the broker and counted;
// once the broker is reachable again a new client is served.
func TestBrokerUnreachableClosesClient(t *testing.T) {
	env := newTestEnv(t, "")
	node := env.nodes()[0]
	up := env.e.env.Upstream("events")
	own, ok := up.Addr(node)
	if !ok {
		t.Fatalf("node %d unknown to the upstream", node)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	up.Learn(node, "127.0.0.1", int32(gone))

	failed := env.e.env.Signals.UpstreamFailed()
	addr := fmt.Sprintf("127.0.0.1:%d", env.nodePort(node))
	r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
	metadataOrders(r)
	r.resetWithoutAnswer(5 * time.Second)
	env.waitLog(5*time.Second, "kafka connection closed: broker unreachable", "broker="+strconv.Itoa(int(node)))
	if n := env.e.env.Signals.UpstreamFailed(); n != failed+1 {
		t.Fatalf("failed upstream connections: %d, want %d", n, failed+1)
	}

	host, port, _ := net.SplitHostPort(own)
	p, _ := strconv.Atoi(port)
	up.Learn(node, host, int32(p))
	servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"]))
}

// A port of the range whose node the upstream does not know: the client is
// reset at its first request, without a dial, logged with the node.
func TestUnknownBrokerClosesClient(t *testing.T) {
	env := newTestEnvWith(t, envConfig{nports: 5}) // the bootstrap and four nodes
	node := env.first + int32(env.nports-2)
	if slices.Contains(env.nodes(), node) {
		t.Fatalf("node %d is the upstream's: the range must reach past its brokers", node)
	}
	failed := env.e.env.Signals.UpstreamFailed()
	r := dialRaw(t, fmt.Sprintf("127.0.0.1:%d", env.nodePort(node)), "acme-app", env.keys["acme-app"])
	metadataOrders(r)
	r.resetWithoutAnswer(5 * time.Second)
	env.waitLog(5*time.Second, "the broker of this port is unknown to the upstream", "node="+strconv.Itoa(int(node)))
	if n := env.e.env.Signals.UpstreamFailed(); n != failed {
		t.Fatalf("failed upstream connections: %d, want %d (no dial)", n, failed)
	}
}

// A broker unreachable for a while (a restart), asked by a client without
// SASL (a certificate's session) on a new connection: franz-go takes an
// orderly close before a connection's first answer for a misconfigured
// listener (ErrFirstReadEOF, "is SASL missing?"; an idempotent producer
// fails every record it buffers when its InitProducerId meets it). The
// gateway resets such a connection instead (signals.CloseCause.Transient), a
// network error franz-go retries; once the broker is back the same
// request is answered.
func TestBrokerUnreachableResetsCertSession(t *testing.T) {
	te := newTLSEnv(t, "")
	up := te.e.env.Upstream("events")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	cl := te.certClient("billing")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	node := te.nodes()[0]
	own, _ := up.Addr(node)
	up.Learn(node, "127.0.0.1", int32(gone))
	_, err = cl.Broker(int(node)).Request(ctx, kmsg.NewPtrMetadataRequest())
	wantReset(t, err, "a request to an unreachable broker")
	te.waitLog(5*time.Second, "kafka connection closed: broker unreachable", "broker="+strconv.Itoa(int(node)))
	host, port, _ := net.SplitHostPort(own)
	p, _ := strconv.Atoi(port)
	up.Learn(node, host, int32(p))
	if _, err := cl.Broker(int(node)).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("once the broker is back: %v", err)
	}
}

// D4, invariant 11: a client that sends an acks=0 Produce and closes (or
// resets) its connection while its broker connection is still being
// dialled (the broker's TLS handshake held) loses nothing: the gateway
// keeps what the client sent and forwards it once the dial ends; the
// records are read back.
func TestClientClosesWhileItsBrokerDials(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true})
	env := secureEnv(t, k.upstream("", ""))
	addr := leaderOf0(t, env)
	closesWhileItsBrokerDials(t, k, env.e, "",
		func() *rawConn { return dialRaw(t, addr, "acme-app", env.keys["acme-app"]) },
		func(c net.Conn) *net.TCPConn { return c.(*net.TCPConn) },
		func() *kgo.Client {
			return env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		})
}

// closesWhileItsBrokerDials: with k's handshakes held, a client from dial
// (authenticated; tcp its socket) sends an acks=0 Produce of 10 records
// named by prefix and closes, then another that resets; each is released
// while its broker connection dials; the consumer reads all 20 back.
func closesWhileItsBrokerDials(t *testing.T, k *securedKafka, e *Engine, prefix string, dial func() *rawConn,
	tcp func(net.Conn) *net.TCPConn, consumer func() *kgo.Client) {
	t.Helper()
	var want []string
	for _, how := range []string{"closes", "resets"} {
		k.stall(true)
		r := dial()
		cl := clientOf(t, e, r)
		var vals [][]byte
		for i := 0; i < 10; i++ {
			vals = append(vals, []byte(fmt.Sprintf("%s%s-%d", prefix, how, i)))
			want = append(want, string(vals[i]))
		}
		if _, err := r.c.Write(produceRequestFrame(r, 7, 0, "orders", batchOf(vals...))); err != nil {
			t.Fatal(err)
		}
		if how == "resets" {
			_ = tcp(r.c).SetLinger(0)
		}
		_ = r.c.Close()
		clientGone(t, cl) // released while its broker connection still dials
		k.stall(false)
	}
	got := consumeAll(t, consumer(), len(want), 20*time.Second)
	var vals []string
	for _, rec := range got {
		vals = append(vals, string(rec.Value))
	}
	slices.Sort(vals) // two connections: no order between them
	if !slices.Equal(vals, want) {
		t.Fatalf("acks=0 Produces sent before their clients closed or reset, during their broker's dial: the broker holds %q, want %q", vals, want)
	}
}
