package engine

// KIP-368: the gateway renews its broker sessions before they end, in clear
// text and under TLS (kfake) and against Apache Kafka's SASL_SSL listener;
// records produced across several sessions are all read back, in order.

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-368: a broker that announces a session lifetime gets a new SASL
// exchange on each broker connection before the session ends; a producer
// and a consumer running across several lifetimes lose nothing, see
// nothing twice, in order, and the broker never reads a request past a
// session's end (it would close the connection, as Kafka does).
func TestUpstreamReauthentication(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "clear text"
		if useTLS {
			name = "TLS"
		}
		t.Run(name, func(t *testing.T) { reauthRun(t, useTLS) })
	}
}

func reauthRun(t *testing.T, useTLS bool) {
	const lifetime = 3 * time.Second
	k := newSecuredKafka(t, securedOpts{tls: useTLS, mech: "SCRAM-SHA-512", lifetime: lifetime})
	// Under TLS the listener cannot read the requests: the broker counts
	// the handshakes (the renewals are those past one per connection).
	var handshakes atomic.Int64
	k.c.ControlKey(17, func(kmsg.Request) (kmsg.Response, error, bool) {
		handshakes.Add(1)
		return nil, nil, false
	})
	env := secureEnv(t, k.upstream("", ""))
	p := env.client("acme-app", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var produced int
	end := time.Now().Add(3*lifetime + time.Second)
	for i := 0; time.Now().Before(end); i++ {
		// Idle gaps longer than a session's renewal point, and bursts.
		if i%40 == 39 {
			time.Sleep(lifetime)
		}
		r := &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(strconv.Itoa(i))}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		produced++
		time.Sleep(20 * time.Millisecond)
	}
	got := consumeAll(t, c, produced, 20*time.Second)
	next := 0
	for _, r := range got {
		if r.Partition != 0 {
			continue
		}
		if string(r.Value) != strconv.Itoa(next) {
			t.Fatalf("record %d reads %q: lost, doubled or out of order", next, r.Value)
		}
		next++
	}
	if next != produced {
		t.Fatalf("read %d records of %d", next, produced)
	}
	if v := k.violations.Load(); v != 0 {
		t.Fatalf("the broker read %d requests after their session's end", v)
	}
	// The producer's and the consumer's connections ran across three
	// lifetimes: each renewed its session, more than once.
	renewals := k.renewals.Load()
	if useTLS {
		renewals = handshakes.Load() - k.accepted.Load()
	}
	if renewals < 4 {
		t.Fatalf("%d sessions renewed, want the producer's and the consumer's, more than once", renewals)
	}
	if env.e.env.Signals.Panics() != 0 {
		t.Fatal("a panic in a callback")
	}
}

// KIP-368 against Apache Kafka (make test-kafka, FLEXWAY_TEST_KAFKA_SECURITY
// =sasl_ssl: the SASL_SSL listener's sessions last 30 s): a producer's
// connections held across more than two sessions, busy and idle, lose
// nothing, in order, and the broker never closes a broker connection for a
// session that ended.
func TestRealKafkaReauthentication(t *testing.T) {
	if _, real := realKafka(); !real || os.Getenv(envKafkaSecurity) != "sasl_ssl" {
		t.Skip("against Apache Kafka's SASL_SSL listener only (make test-kafka)")
	}
	env := newTestEnv(t, "")
	p := env.client("acme-app", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	produced := 0
	// The renewals done on the gateway's broker connections, and whether
	// the broker announced a lifetime at all (else none is needed).
	renewals := func() (n int, announced bool) {
		var mu sync.Mutex
		onLoops(t, env.e, func(l *session.Loop) {
			mu.Lock()
			defer mu.Unlock()
			for cl := range l.Clients() {
				st := cl.State()
				n += st.Renews
				announced = announced || !st.RenewBy.IsZero()
			}
		})
		return n, announced
	}
	end := time.Now().Add(70 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		produced++
		if i == 5 {
			if _, announced := renewals(); !announced {
				t.Fatal("the broker announced no session lifetime: the listener's connections.max.reauth.ms is not in force")
			}
		}
		if i%20 == 19 {
			time.Sleep(12 * time.Second) // idle past a renewal point
		} else {
			time.Sleep(250 * time.Millisecond)
		}
	}
	c := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := 0
	for _, r := range consumeAll(t, c, produced, 30*time.Second) {
		if r.Partition != 0 {
			continue
		}
		if string(r.Value) != strconv.Itoa(next) {
			t.Fatalf("record %d reads %q", next, r.Value)
		}
		next++
	}
	if next != produced {
		t.Fatalf("read %d records of %d", next, produced)
	}
	// A connection renews at its first request past its renewal point
	// (26 s here): with the idle gaps, once or twice in 70 s.
	if n, _ := renewals(); n < 1 {
		t.Fatalf("no session renewed on the producer's broker connections in 70 s of 30 s sessions")
	}
	for {
		select {
		case line := <-env.logs.ch:
			if strings.Contains(line, "broker connection ended") || strings.Contains(line, "kafka upstream authentication failed") {
				t.Fatalf("a broker connection ended: %s", line)
			}
			continue
		default:
		}
		break
	}
}
