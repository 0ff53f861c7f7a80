package session

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters"
)

// quotaTestClient is a client as a loop holds one after authentication,
// enough for the quota steps alone (quota.go): quotas on every rate (when
// on), far above what a test sends; the buckets counted in store (nil:
// on the replica alone).
func quotaTestClient(tb testing.TB, on bool, store quota.Store) *Client {
	tb.Helper()
	l := &configs.KafkaListener{}
	if on {
		r := &configs.Rates{ProducerByteRate: 1000 << 30, ConsumerByteRate: 1000 << 30, RequestRate: 1e9}
		l.Quotas = &configs.Quotas{Client: r, Tenant: r, Window: configs.Duration(time.Second), MaxThrottle: configs.Duration(10 * time.Second)}
	}
	snap := &configs.Snapshot{Listener: l, Clusters: map[string]*configs.Cluster{"shop": {Name: "shop"}}}
	env := NewEnv(slog.New(slog.NewTextHandler(io.Discard, nil)))
	env.Quotas.Buckets = quota.NewRegistry(store, nil)
	cl := &Client{env: env, snap: snap, route: Route{Cluster: snap.Clusters["shop"]},
		auth: clientAuth{ident: &auth.Identity{Principal: "acme-app", Tenant: "acme", Mechanism: configs.Mechanism("plain")}}}
	if q := cl.quotas().quotaOn(); q != nil { // the buckets read from the store once (Principal.Owed waits for it)
		for q.p.Owed(quota.Requests, time.Now(), &q.lim) > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return cl
}

// redisStore opens a shared counter store (server.counters) on a
// redis-server started for the test, closed at its end.
func redisStore(tb testing.TB) quota.Store {
	tb.Helper()
	srv := testkit.StartRedis(tb)
	store, err := counters.Open(srv.URL(), time.Second, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	return store
}

// quotaSteps are the quota's steps of one forwarded Produce and one Fetch
// answer, on the loop.
func quotaSteps(cl *Client) func() {
	frame := make([]byte, 16<<10)
	h := codec.RequestHeader{Key: codec.KeyProduce, Version: 9}
	p := &decide.Pending{Key: codec.KeyFetch}
	return func() {
		cl.quotas().quotaHold(h.Key, len(frame))
		cl.quotas().quotaGate(&h, len(frame))
		cl.quotas().quotaPending(p)
		cl.quotas().quotaAnswer(p, 64<<10)
	}
}

// Invariant 18 with quotas: a Produce and a Fetch answer spent against
// quotas configured and not reached allocate nothing, with the tenant's
// buckets counted in a shared store (server.counters) too.
func TestQuotaPathAllocs(t *testing.T) {
	t.Run("local", func(t *testing.T) { quotaPathAllocs(t, quotaTestClient(t, true, nil)) })
	t.Run("redis", func(t *testing.T) { quotaPathAllocs(t, quotaTestClient(t, true, redisStore(t))) })
}

func quotaPathAllocs(t *testing.T, cl *Client) {
	step := quotaSteps(cl)
	step() // the buckets and series are made at the first request
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("%v allocations per request under quotas", n)
	}
	if cl.q == nil || cl.q.p == nil || cl.quotas().muted() {
		t.Fatalf("quota state %+v: want the buckets held, nothing throttled", cl.q)
	}
	cl.quotas().quotaRelease()
}

// BenchmarkQuotaRequestPath: what quotas configured and not reached add
// to one forwarded Produce and one Fetch answer, on the loop (the steps
// of quota.go alone): compare with the forward path's own cost per
// request (decide's BenchmarkSession*, codec's rewriters).
//
//	go test ./engine/session -run '^$' -bench QuotaRequestPath -benchmem
func BenchmarkQuotaRequestPath(b *testing.B) {
	for _, c := range []struct {
		name      string
		on, redis bool
	}{{"off", false, false}, {"on", true, false}, {"on+redis", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			var store quota.Store
			if c.redis {
				store = redisStore(b)
			}
			cl := quotaTestClient(b, c.on, store)
			step := quotaSteps(cl)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step()
			}
			b.StopTimer()
			cl.quotas().quotaRelease()
		})
	}
}
