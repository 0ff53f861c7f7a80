package engine

// U1 over TLS: the gateway reaches a broker over TLS (with SCRAM-SHA-512,
// or presenting a client certificate), refuses a broker certificate of
// another CA or name, and pauses a TLS broker connection (invariant 20).

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/conn"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// U1: the gateway reaches a broker over TLS (its CA, its name) with
// SCRAM-SHA-512: records are produced and read back through it; each
// client connection has its own broker connection (U2).
func TestUpstreamTLSAndSCRAM512(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true, mech: "SCRAM-SHA-512"})
	env := secureEnv(t, k.upstream("", ""))
	produceConsume(t, env, 20, "tls-scram")
	// The broker holds them under the physical name.
	cl := k.direct(kgo.ConsumeTopics("acme.orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeAll(t, cl, 20, 10*time.Second); len(got) < 20 {
		t.Fatalf("the broker holds %d records in acme.orders, want 20", len(got))
	}
	countBrokerConns(t, env, k)

	// Answers of many TLS records, relayed as they arrive (a Fetch
	// larger than one unit): byte for byte.
	big := env.client("acme-app", kgo.ProducerBatchMaxBytes(2<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := map[string]string{}
	for i := 0; i < 4; i++ {
		v := strings.Repeat(randomHex(t, 16), 12<<10) // 384 KiB
		key := fmt.Sprintf("big-%d", i)
		want[key] = v
		if err := big.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte(key), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rd := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(4<<20))
	got := 0
	for _, r := range consumeAll(t, rd, 20+len(want), 20*time.Second) {
		if v, ok := want[string(r.Key)]; ok {
			if string(r.Value) != v {
				t.Fatalf("record %s read back altered (%d bytes, want %d)", r.Key, len(r.Value), len(v))
			}
			got++
		}
	}
	if got != len(want) {
		t.Fatalf("read back %d large records of %d", got, len(want))
	}
}

// U1: TLS alone, the gateway presenting a client certificate (mTLS).
func TestUpstreamTLSClientCertificate(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true})
	line := fmt.Sprintf("{ ca_file: %q, cert_file: %q, key_file: %q, server_name: kafka.test }",
		filepath.Join(k.dir, "ca.crt"), filepath.Join(k.dir, "client.crt"), filepath.Join(k.dir, "client.key"))
	env := secureEnv(t, k.upstream(line, ""))
	produceConsume(t, env, 10, "mtls")
	countBrokerConns(t, env, k)
}

// A broker certificate of another CA, or for another name: the gateway
// does not start on it (its control client), and once started, a dial
// that meets one fails, logged with the upstream and the broker, the
// client closed at once, never a key in the line.
func TestUpstreamTLSRefusedCertificate(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true, mech: "SCRAM-SHA-512"})
	other := newTestCA(t, "another CA")
	otherCA := writeFile(t, k.dir, "other-ca.crt", other.pem)
	good := k.upstream("", "")
	for _, tc := range []struct {
		name, line, why string
	}{
		{"another CA", fmt.Sprintf("{ ca_file: %q, server_name: kafka.test }", otherCA), "certificate signed by unknown authority"},
		{"another name", fmt.Sprintf("{ ca_file: %q, server_name: kafka.example }", filepath.Join(k.dir, "ca.crt")), "kafka.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := k.upstream(tc.line, "")
			// At start: refused, naming the upstream.
			snap := loadWithUpstream(t, bad)
			if _, err := New(context.Background(), snap); err == nil || !strings.Contains(err.Error(), "events") || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("New = %v, want a refusal naming the upstream and %q", err, tc.why)
			}

			// Once started: the dial fails.
			running := secureEnv(t, good)
			reloadReplacing(t, running, good, bad)
			node := running.nodes()[0]
			r := dialRaw(t, fmt.Sprintf("127.0.0.1:%d", running.nodePort(node)), "acme-app", running.keys["acme-app"])
			metadataOrders(r)
			r.resetWithoutAnswer(10 * time.Second)
			line := running.waitLog(10*time.Second, "kafka connection closed: broker unreachable", "upstream=events", "broker="+strconv.Itoa(int(node)), tc.why)
			if strings.Contains(line, "PRIVATE KEY") || strings.Contains(line, k.pass) {
				t.Fatalf("the log line holds a secret: %s", line)
			}
		})
	}
}

// Invariant 20 under upstream TLS: a paused broker connection keeps its
// record layer (looptls) over its handle; nothing crosses while paused,
// the answer is decrypted once resumed, on the same loop.
func TestPauseBrokerConnectionTLS(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true, mech: "SCRAM-SHA-512"})
	env := secureEnv(t, k.upstream("", ""))
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	r.send(emptyFetch(0)) // dials the broker
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	var p *conn.Conn
	onLoopOf(t, cl, func() {
		if !cl.State().BrokerTLS {
			t.Error("the broker connection has no TLS record layer")
		}
		p = pauseUp(cl)
	})
	if p == nil {
		t.Fatal("not paused")
	}
	answerWaitsWhilePaused(t, r, cl, p, &resp)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("the answer after the resume: %+v", resp)
	}
	onLoopOf(t, cl, func() {
		if !cl.State().BrokerTLS || p.EventLoop() != cl.Conn().EventLoop() {
			t.Error("the broker connection lost its record layer, or came back on another loop")
		}
	})
	servedOrders(t, r)
}
