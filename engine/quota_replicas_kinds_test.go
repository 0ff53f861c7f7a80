package engine

// Issue 34.5, Q1 and Q3: two gateways on one real redis-server
// (server.counters) hold consumer_byte_rate and request_rate together as
// they hold producer_byte_rate (quota_replicas_test.go), and a principal
// in debt on one is in debt on the other from its first request there.

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicaSync is the stores' reconciliation in the debt's tests; the rates'
// run under the default (1s) and a short one.
const replicaSync = 200 * time.Millisecond

var replicaSyncs = []time.Duration{counters.DefaultSync, replicaSync}

// twoReplicas starts two gateways under the quotas of listenerExtra, each
// with its own server.counters store (reconciled every every) on one
// redis-server srv, in front of three kfake brokers each (spreadUpstream).
func twoReplicas(t *testing.T, srv *testkit.Redis, every time.Duration, listenerExtra string) [2]*testEnv {
	t.Helper()
	var envs [2]*testEnv
	for i := range envs {
		store, err := counters.Open(srv.URL(), every, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		envs[i] = newTestEnvWith(t, envConfig{listenerExtra: listenerExtra, upstream: spreadUpstream}, WithCounters(store))
	}
	return envs
}

// (a) A tenant's consumer_byte_rate, a consumer on each replica, the
// answers both read together, seconds 4 to 14 (each replica ran alone
// from a full bucket until it learned the other's spending, then paid it
// back): the tenant's rate ±15 %, with the default sync and a short one.
func TestQuotaReplicasShareConsumerRateRedis(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	for _, every := range replicaSyncs {
		t.Run("sync "+every.String(), func(t *testing.T) {
			t.Parallel()
			shareConsumerRate(t, every)
		})
	}
}

func shareConsumerRate(t *testing.T, every time.Duration) {
	srv := testkit.StartRedis(t)
	envs := twoReplicas(t, srv, every, "    quotas:\n      tenant: { consumer_byte_rate: 1MiB }\n      window: 1s\n      max_throttle: 5s\n")
	var cons []*kgo.Client
	m := newMeter()
	for i, env := range envs {
		direct := env.directClient(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
		recs := make([]*kgo.Record, 0, 4<<10)
		for j := 0; j < 4<<10; j++ { // 16 MiB on each replica's brokers
			recs = append(recs, &kgo.Record{Topic: env.phys("acme", "orders"), Value: noiseRecord(i<<20+j, 4<<10)})
		}
		if err := direct.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cons = append(cons, libraryClient(t, env, "acme-app", kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&fetchReadHook{m: m})))
	}
	ctx, cancel := m.window(15 * time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range cons {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c.PollFetches(ctx)
			}
		}()
	}
	wg.Wait()
	t.Logf("KiB each second from the first: %v", m.perSecond(15*time.Second))
	holdsRate(t, "two replicas' consumers together, seconds 4 to 14", m.rate(4*time.Second, 14*time.Second), 1<<20)
}

// (b) A tenant's request_rate, Metadata asked flat out on each replica
// (four goroutines of one client each), the answers counted together,
// seconds 4 to 14: the tenant's rate ±15 %, with the default sync and a
// short one.
func TestQuotaReplicasShareRequestRateRedis(t *testing.T) {
	t.Parallel()
	for _, every := range replicaSyncs {
		t.Run("sync "+every.String(), func(t *testing.T) {
			t.Parallel()
			shareRequestRate(t, every)
		})
	}
}

func shareRequestRate(t *testing.T, every time.Duration) {
	srv := testkit.StartRedis(t)
	envs := twoReplicas(t, srv, every, "    quotas:\n      tenant: { request_rate: 100 }\n      window: 1s\n      max_throttle: 5s\n")
	var cls []*kgo.Client
	for _, env := range envs {
		cls = append(cls, libraryClient(t, env, "acme-app"))
	}
	m := newMeter()
	ctx, cancel := m.window(15 * time.Second)
	defer cancel()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for _, cl := range cls {
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req := kmsg.NewPtrMetadataRequest()
					req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
					if _, err := req.RequestWith(ctx, cl); err != nil {
						if ctx.Err() == nil {
							failed.Add(1)
						}
						continue
					}
					m.add(1)
				}
			}()
		}
	}
	wg.Wait()
	got := m.rate(4*time.Second, 14*time.Second)
	t.Logf("Metadata answered by both replicas, seconds 4 to 14: %.1f/s (the tenant's request_rate 100)", got)
	if !within(got, 100, 0.15) {
		t.Errorf("two replicas answered %.1f Metadata/s, want the tenant's request_rate 100 ±15 %%", got)
	}
	if failed.Load() != 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
}

// (c) A key driven into debt on replica A (512 KiB produced at once
// against producer_byte_rate 64 KiB/s with a 1 s depth: 7 s owed), once
// A's spending is in the store, connects to replica B for the first time:
// its first record there is acknowledged only once the debt is paid (a
// fresh bucket on B would take it at once), and not much later.
func TestQuotaReplicasDebtCarriedRedis(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	envs := twoReplicas(t, srv, replicaSync, "    quotas:\n      client: { producer_byte_rate: 64KiB }\n      window: 1s\n      max_throttle: 30s\n")
	opts := []kgo.Opt{kgo.ProducerBatchMaxBytes(1 << 20), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequestTimeoutOverhead(40 * time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	a := envs[0].client("acme-app", opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const big = 512 << 10
	if err := a.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: make([]byte, big)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	paidAt := time.Now().Add(7 * time.Second) // 512 KiB at 64 KiB/s, less the 1 s depth, counted from now at the latest
	waitUntil(t, 30*time.Second, "replica A's spending in redis", func() bool {
		keys, _ := srv.Do("KEYS", "flexway:kafka:rate:acme:*acme-app:producer_byte_rate:running")
		for _, k := range strings.Fields(keys) {
			n, _ := srv.Do("HGET", k, "n")
			if v, err := strconv.ParseInt(n, 10, 64); err == nil && v >= big {
				return true
			}
		}
		return false
	})
	b := envs[1].client("acme-app", opts...)
	start := time.Now()
	if err := b.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	owed := time.Until(paidAt) + took // what was owed when B's first request came
	t.Logf("the key's first record on replica B acknowledged in %v (about %v owed on A)", took.Round(time.Millisecond), owed.Round(time.Millisecond))
	if took < owed-2*time.Second {
		t.Errorf("the key in debt on A (%v owed) had its first record on B acknowledged in %v: a fresh bucket", owed.Round(time.Millisecond), took)
	}
	if took > owed+10*time.Second {
		t.Errorf("its first record on B took %v, %v owed: held past the debt", took, owed.Round(time.Millisecond))
	}
}

// The first read's bound (issue 34.5): a store that takes connections and
// never answers (its own timeout, 1 s, not reached yet) holds a
// principal's first request on the replica quota.FirstReadWait, not
// longer: then the request goes on, decided on the replica's own buckets,
// and a line says so.
func TestQuotaReplicasFirstReadBounded(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // takes connections, answers nothing
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	store, err := counters.Open("redis://"+ln.Addr().String(), replicaSync, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	env := newTestEnvWith(t, envConfig{listenerExtra: "    quotas:\n      client: { producer_byte_rate: 1MiB }\n", upstream: spreadUpstream}, WithCounters(store))
	cl := env.client("acme-app")
	start := time.Now()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("the first record, its buckets never read from the store: acknowledged in %v", took.Round(time.Millisecond))
	if took < quota.FirstReadWait {
		t.Errorf("acknowledged in %v: the first request was not held for the store's read (%v)", took, quota.FirstReadWait)
	}
	if took > quota.FirstReadWait+5*time.Second {
		t.Errorf("acknowledged in %v: held past the bound (%v)", took, quota.FirstReadWait)
	}
	env.waitLog(10*time.Second, "quota buckets not yet read from the shared counter store", "tenant=acme")
}
