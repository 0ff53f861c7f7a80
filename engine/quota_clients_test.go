package engine

// Issue 22: quotas that hold the rate for clients as users run them: the
// library's defaults (no batch, buffer or timeout chosen for the gateway),
// a topic spread over three brokers (one connection per broker, requests
// pipelined), the seed's configuration. The rates are the feature under
// test: each is measured over 10 s after the first burst and must lie
// within ±15 % of the configured one (issue 22.1).

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// seedQuotas is the seed's configuration of issue 22 (seed 001, "Par
// client"), under listeners.kafka.
const seedQuotas = "    quotas:\n      client: { producer_byte_rate: 1MiB, consumer_byte_rate: 2MiB }\n" +
	"      tenant: { producer_byte_rate: 2MiB }\n      window: 1s\n      max_throttle: 5s\n"

// spreadUpstream: a topic of three partitions over three brokers (a
// library's default request holds 1 MB a partition: one a broker).
const spreadUpstream = "    embedded: { brokers: 3, partitions: 3 }\n"

// quotaEnv is a gateway under the quotas of listenerExtra in front of three
// kfake brokers holding the topic (spreadUpstream), or, under make
// test-kafka, the real broker: each library is then tried once against
// Apache Kafka too (issue 22.1).
func quotaEnv(t *testing.T, listenerExtra string) *testEnv {
	t.Helper()
	ec := envConfig{listenerExtra: listenerExtra, upstream: spreadUpstream}
	if _, real := realKafka(); real {
		ec.upstream = ""
	}
	return newTestEnvWith(t, ec)
}

// libraryClient is a franz-go client as a user makes one: the bootstrap,
// the key, and nothing else but opts (the library's defaults: 1 MB
// batches, 10,000 buffered records, its own timeouts and retries).
func libraryClient(t *testing.T, env *testEnv, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(env.boot),
		kgo.SASL(plain.Auth{User: id, Pass: env.keys[id]}.AsMechanism()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// noise is incompressible bytes: a library's default compression (snappy
// in franz-go) leaves records of it as they are, so the bytes a quota
// counts on the wire are the records' (Kafka's quotas count the wire).
var noise = func() []byte {
	b := make([]byte, 4<<20)
	_, _ = rand.Read(b)
	return b
}()

// noiseRecord is the i-th record of size bytes of noise.
func noiseRecord(i, size int) []byte {
	off := (i * size) % (len(noise) - size)
	return noise[off : off+size]
}

// produceNoise produces records of size bytes of noise as fast as cl takes
// them until ctx ends, counting what is acknowledged in m.
func produceNoise(ctx context.Context, cl *kgo.Client, size int, m *meter, errs *atomic.Int64) {
	for i := 0; ctx.Err() == nil; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: "orders", Value: noiseRecord(i, size)}, func(r *kgo.Record, err error) {
			switch {
			case err == nil:
				m.add(len(r.Value))
			case ctx.Err() == nil:
				errs.Add(1)
			}
		})
	}
}

// lumpRate is the rate between the first and the last count in [from, to)
// after the meter's first count: what came from the first count up to,
// not with, the last, over the time between them. A flow that comes in
// lumps (a library's request of 1 MB a partition, admitted whole once the
// bucket is back within its depth) is then measured lump to lump: a lump
// admitted at a is paid by the time the next is admitted, so the lumps
// before the last are exactly what the time between the first and the last
// paid for. A 10 s window would round it to the lumps it happens to hold
// (at 1 MiB/s, lumps of 1.9 MiB read anywhere from 0.9 to 1.3).
func (m *meter) lumpRate(from, to time.Duration) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		return 0
	}
	first := m.events[0].at
	var t0, t1 time.Duration
	total, last, n := 0, 0, 0
	for _, e := range m.events {
		at := e.at - first
		if at < from || at >= to {
			continue
		}
		if n == 0 {
			t0 = at
		}
		total += e.n
		t1, last = at, e.n
		n++
	}
	if n < 2 || t1 <= t0 {
		return 0
	}
	return float64(total-last) / (t1 - t0).Seconds()
}

// holdsRate checks a rate measured against the configured one (±15 %).
func holdsRate(t *testing.T, what string, got, want float64) {
	t.Helper()
	t.Logf("%s: %.3f MiB/s (configured %.3f)", what, got/(1<<20), want/(1<<20))
	if !within(got, want, 0.15) {
		t.Errorf("%s: %.3f MiB/s, want %.3f MiB/s ±15 %%", what, got/(1<<20), want/(1<<20))
	}
}

// Q1, Q2, issue 22.1: a franz-go producer with the library's defaults
// (1 KiB records flat out, acks=all, a connection per broker) is held to
// its principal's producer_byte_rate, not to a multiple of it per
// connection, and none of its records fails.
func TestQuotaLibraryProducerHeldToRate(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	for _, c := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"defaults", nil},
		// The shape users choose for throughput: a linger and a deep buffer.
		{"linger", []kgo.Opt{kgo.ProducerLinger(2 * time.Millisecond), kgo.MaxBufferedRecords(4096)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := quotaEnv(t, seedQuotas)
			h := &throttleHook{}
			cl := libraryClient(t, env, "acme-orders-producer", append(c.opts, kgo.WithHooks(h))...)
			gw, stop := gatewayMeter(env, signals.DirProduce)
			m := newMeter()
			// A request of the library's defaults holds 1 MB a partition:
			// at 1 MiB/s its acknowledgements come every second or two,
			// so the run goes on past the span measured.
			ctx, cancel := m.window(17 * time.Second)
			defer cancel()
			var errs atomic.Int64
			produceNoise(ctx, cl, 1<<10, m, &errs)
			stop()
			// What the gateway let through is the quota's figure; the
			// acknowledgements lag it by the broker's answer, which
			// varies by a second on a busy machine.
			t.Logf("KiB acknowledged each second: %v; seconds 4 to 14: %.3f MiB/s", m.perSecond(17*time.Second), m.rate(4*time.Second, 14*time.Second)/(1<<20))
			logGateway(t, env, gw, "produce")
			holdsRate(t, "forwarded, seconds 4 to 14", gw.lumpRate(4*time.Second, 14*time.Second), 1<<20)
			if h.n.Load() == 0 {
				t.Error("the client read no throttle_time_ms")
			}
			if errs.Load() != 0 {
				t.Errorf("%d records failed (a request expired while held?)", errs.Load())
			}
		})
	}
}

// Q1, issue 22.1: the same producer given 10 MiB at once with a linger and
// a deep buffer has them acknowledged at the rate, not in one go: all the
// Produce bytes it wrote, less the bucket's 1 MiB burst and less its
// largest request (admitted whole while the bucket was not overdrawn: 1 MB
// a partition, and kfake may give one broker several partitions), take at
// least their time at 1 MiB/s (less 15 %).
func TestQuotaBufferedProducerPaced(t *testing.T) {
	t.Parallel()
	env := quotaEnv(t, seedQuotas)
	w := &produceWriteHook{}
	cl := libraryClient(t, env, "acme-orders-producer", kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(4096), kgo.WithHooks(w))
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for i := 0; i < 10<<10; i++ { // 10 MiB of 1 KiB records
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: "orders", Value: noiseRecord(i, 1<<10)}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	took := time.Since(start)
	total, largest := w.total.Load(), w.largest.Load()
	want := time.Duration(float64(total-1<<20-largest) / (1 << 20) * float64(time.Second))
	t.Logf("10 MiB acknowledged in %v: %.2f MiB of Produce requests written, the largest %.2f MiB: at least %v at the rate",
		took, float64(total)/(1<<20), float64(largest)/(1<<20), want)
	if failed.Load() != 0 {
		t.Errorf("%d records failed", failed.Load())
	}
	if took < want*85/100 {
		t.Errorf("10 MiB acknowledged in %v: want at least %v at 1 MiB/s, less 15 %%", took, want)
	}
}

// produceWriteHook counts the Produce requests a franz-go client writes:
// their bytes in all, and the largest.
type produceWriteHook struct{ total, largest atomic.Int64 }

func (h *produceWriteHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key != 0 || err != nil {
		return
	}
	h.total.Add(int64(n))
	for {
		l := h.largest.Load()
		if int64(n) <= l || h.largest.CompareAndSwap(l, int64(n)) {
			return
		}
	}
}

// Q1, issue 22.1, the seed's "Par tenant": several keys of one tenant
// writing together with the library's defaults are held to the tenant's
// rate, whatever their number. max_throttle is the seed's example's, its
// default (10 s): at 5 s the six connections' requests of some 950 KiB
// each take their turns in about 3.7 s, a request that loses its turn a
// few times reaches the cap and goes on in debt, and the others after it
// (2 to 5 a run, lumps of 4.75 MiB in one second): the cap wins over the
// rate (invariant 33), which this test is not about.
func TestQuotaTenantKeysTogetherHeldToRate(t *testing.T) {
	t.Parallel()
	env := quotaEnv(t, "    quotas:\n      client: { producer_byte_rate: 1MiB }\n      tenant: { producer_byte_rate: 1536KiB }\n")
	gw, stop := gatewayMeter(env, signals.DirProduce)
	m := newMeter()
	ctx, cancel := m.window(17 * time.Second)
	defer cancel()
	var errs atomic.Int64
	var wg sync.WaitGroup
	for _, id := range []string{"acme-app", "acme-orders-producer"} {
		cl := libraryClient(t, env, id)
		wg.Add(1)
		go func() { defer wg.Done(); produceNoise(ctx, cl, 1<<10, m, &errs) }()
	}
	wg.Wait()
	stop()
	t.Logf("acknowledged, seconds 4 to 14: %.3f MiB/s", m.rate(4*time.Second, 14*time.Second)/(1<<20))
	logGateway(t, env, gw, "produce")
	t.Logf("requests let through in debt after max_throttle: %d", env.e.env.Series.QuotaCapped.Load())
	holdsRate(t, "the tenant's keys together, forwarded, seconds 4 to 14", gw.lumpRate(4*time.Second, 14*time.Second), 1536<<10)
	if errs.Load() != 0 {
		t.Errorf("%d records failed", errs.Load())
	}
}

// Q1, issue 22.1-2: a franz-go consumer with the library's defaults (50 MiB
// Fetches) reading a full topic spread over three brokers is held to its
// consumer_byte_rate, and its first second brings what its bucket allows
// (the 2 MiB it holds and the 2 MiB that come in that second), not a
// 50 MiB Fetch answer.
func TestQuotaLibraryConsumerHeldToRate(t *testing.T) {
	t.Parallel()
	env := quotaEnv(t, seedQuotas)
	// 64 MiB to read, written at the broker directly in batches of 16 KiB.
	direct := env.directClient(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	val := make([]byte, 4<<10)
	recs := make([]*kgo.Record, 0, 16<<10)
	for i := 0; i < 16<<10; i++ {
		recs = append(recs, &kgo.Record{Topic: env.phys("acme", "orders"), Value: val})
	}
	if err := direct.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m := newMeter()
	h := &throttleHook{}
	cons := libraryClient(t, env, "acme-app", kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(h, &fetchReadHook{m: m}))
	ctx, cancel := m.window(17 * time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cons.PollFetches(ctx)
	}
	first := m.rate(0, time.Second)
	t.Logf("first second: %.3f MiB of Fetch answers; %d throttles read", first/(1<<20), h.n.Load())
	if first > 1.15*float64(4<<20) {
		t.Errorf("first second brought %.3f MiB: want at most the bucket's 2 MiB and the second's 2 MiB", first/(1<<20))
	}
	holdsRate(t, "Fetch answers, seconds 4 to 14", m.rate(4*time.Second, 14*time.Second), 2<<20)
}

// Q1, issue 22.1: request_rate holds as the byte rates do: a principal
// asking Metadata flat out from four goroutines of one franz-go client
// (its connections to three brokers) is served at its request_rate.
func TestQuotaRequestRateHeld(t *testing.T) {
	t.Parallel()
	env := quotaEnv(t, "    quotas:\n      client: { request_rate: 100 }\n      window: 1s\n      max_throttle: 5s\n")
	cl := libraryClient(t, env, "acme-app")
	m := newMeter()
	ctx, cancel := m.window(17 * time.Second)
	defer cancel()
	var failed atomic.Int64
	var wg sync.WaitGroup
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
	wg.Wait()
	got := m.rate(4*time.Second, 14*time.Second)
	t.Logf("Metadata answered, seconds 4 to 14: %.1f/s (request_rate 100)", got)
	if !within(got, 100, 0.15) {
		t.Errorf("Metadata answered at %.1f/s, want request_rate 100 ±15 %%", got)
	}
	if failed.Load() != 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
}

// Q1, issue 22.1: two keys of one tenant consuming together with the
// library's defaults are held to the tenant's consumer_byte_rate.
func TestQuotaTenantConsumersTogetherHeldToRate(t *testing.T) {
	t.Parallel()
	env := quotaEnv(t, "    quotas:\n      tenant: { consumer_byte_rate: 2MiB }\n      window: 1s\n      max_throttle: 5s\n")
	direct := env.directClient(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	recs := make([]*kgo.Record, 0, 16<<10)
	for i := 0; i < 16<<10; i++ { // 64 MiB
		recs = append(recs, &kgo.Record{Topic: env.phys("acme", "orders"), Value: noiseRecord(i, 4<<10)})
	}
	if err := direct.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m := newMeter()
	ctx, cancel := m.window(17 * time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range []string{"acme-app", "acme-orders-reader"} {
		cons := libraryClient(t, env, id, kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&fetchReadHook{m: m}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cons.PollFetches(ctx)
			}
		}()
	}
	wg.Wait()
	holdsRate(t, "the tenant's consumers together, seconds 4 to 14", m.rate(4*time.Second, 14*time.Second), 2<<20)
}
