package engine

// Quotas held over time (Q1, Q2), each rate measured over 10 s: a franz-go
// producer and a consumer held to their rates, two keys of a tenant held
// to the tenant's while another tenant keeps its throughput, and kcat held
// to its rate though it ignores throttle_time_ms.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Q1, Q2, the seed's "Par client": a franz-go producer with
// client.producer_byte_rate 1MiB is held to 1 MiB/s ±10 % (measured over
// 10 s after the first window's burst), reads throttle_time_ms, and no
// request times out with max_throttle (2 s) below its timeout (4 s).
func TestQuotaProducerHeldToRate(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 1MiB }\n      max_throttle: 2s\n")
	h := &throttleHook{}
	cl := env.client("acme-app", producerOpts(h)...)
	m := newMeter()
	ctx, cancel := m.window(13 * time.Second)
	defer cancel()
	var errs atomic.Int64
	produceFlatOut(ctx, cl, 8<<10, m, &errs)
	got := m.rate(2*time.Second, 12*time.Second)
	t.Logf("held to %.0f B/s (%.3f MiB/s), %d throttles read", got, got/(1<<20), h.n.Load())
	if !within(got, 1<<20, 0.10) {
		t.Errorf("rate %.3f MiB/s, want 1 MiB/s ±10 %%", got/(1<<20))
	}
	if h.n.Load() == 0 {
		t.Error("the client read no throttle_time_ms")
	}
	if errs.Load() != 0 {
		t.Errorf("%d records failed (a request timed out?)", errs.Load())
	}
}

// Q1, the seed's "Par tenant": two keys of acme together are held to the
// tenant's rate, while globex (its own bucket, under it) keeps its
// throughput and is never throttled.
func TestQuotaTenantHeldOthersKeepThroughput(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	env := newTestEnv(t, "    quotas:\n      tenant: { producer_byte_rate: 1MiB }\n")
	acme := newMeter()
	ctx, cancel := acme.window(13 * time.Second)
	defer cancel()
	var errs atomic.Int64
	var wg sync.WaitGroup
	for _, id := range []string{"acme-app", "acme-orders-producer"} {
		cl := env.client(id, producerOpts(&throttleHook{})...)
		wg.Add(1)
		go func() { defer wg.Done(); produceFlatOut(ctx, cl, 8<<10, acme, &errs) }()
	}
	// globex: paced at 512 KiB/s (8 KiB every 15.6 ms), under its quota.
	gh := &throttleHook{}
	gcl := env.client("globex-app", producerOpts(gh)...)
	globex := newMeter()
	wg.Add(1)
	go func() {
		defer wg.Done()
		val := make([]byte, 8<<10)
		// Paced from a first record acknowledged: the client's set-up (its
		// metadata, the gateway's broker dials, slow over SASL_SSL while
		// acme's producers run) is not caught up as one burst.
		if err := gcl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: val}).FirstErr(); err != nil {
			if ctx.Err() == nil {
				t.Errorf("globex's first record: %v", err)
			}
			return
		}
		start, sent := time.Now(), 0
		for ctx.Err() == nil {
			// As many records as 64 a second make by now (a late wake-up
			// catches up: the pace is the client's, not the scheduler's).
			for due := int(time.Since(start) * 64 / time.Second); sent < due; sent++ {
				gcl.Produce(ctx, &kgo.Record{Topic: "orders", Value: val}, func(r *kgo.Record, err error) {
					if err == nil {
						globex.add(len(r.Value))
					}
				})
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	wg.Wait()
	a := acme.rate(2*time.Second, 12*time.Second)
	g := globex.rate(2*time.Second, 12*time.Second)
	t.Logf("acme (two keys) %.3f MiB/s, globex %.3f MiB/s", a/(1<<20), g/(1<<20))
	if !within(a, 1<<20, 0.10) {
		t.Errorf("acme's two keys together: %.3f MiB/s, want the tenant's 1 MiB/s ±10 %%", a/(1<<20))
	}
	if !within(g, 512<<10, 0.10) {
		t.Errorf("globex: %.3f MiB/s, want its 0.5 MiB/s ±10 %%", g/(1<<20))
	}
	if gh.n.Load() != 0 {
		t.Errorf("globex was throttled %d times", gh.n.Load())
	}
	if errs.Load() != 0 {
		t.Errorf("%d acme records failed", errs.Load())
	}
}

// Q1, Q2: a consumer past consumer_byte_rate is held to it (the Fetch
// answers' bytes, measured over 10 s).
func TestQuotaConsumerHeldToRate(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	env := newTestEnv(t, "    quotas:\n      client: { consumer_byte_rate: 1MiB }\n")
	// 16 MiB to read, written at the broker directly in batches of 64 KiB
	// (an answer holds whole batches: small ones, a fine-grained rate).
	direct := env.directClient(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10))
	val := make([]byte, 16<<10)
	var recs []*kgo.Record
	for i := 0; i < 1024; i++ {
		recs = append(recs, &kgo.Record{Topic: env.phys("acme", "orders"), Value: val})
	}
	if err := direct.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// What the quota counts is the Fetch answers (Kafka's own consumer
	// quota counts the same): the answers' bytes as the client reads them.
	// Apache Kafka ends an answer with the part of a batch that fits (the
	// client drops it and fetches it again): the records' values are then a
	// quarter less than the answers here (64 KiB answers of 48 KiB batches).
	h := &throttleHook{}
	m, values := newMeter(), newMeter()
	fr := &fetchReadHook{m: m}
	cons := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(128<<10), kgo.FetchMaxPartitionBytes(64<<10), kgo.WithHooks(h, fr))
	ctx, cancel := m.window(13 * time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { values.add(len(r.Value)) })
	}
	got := m.rate(2*time.Second, 12*time.Second)
	t.Logf("consumer held to %.3f MiB/s of Fetch answers (%.3f MiB/s of record values), %d throttles read",
		got/(1<<20), values.rate(2*time.Second, 12*time.Second)/(1<<20), h.n.Load())
	if !within(got, 1<<20, 0.10) {
		t.Errorf("rate %.3f MiB/s, want 1 MiB/s ±10 %%", got/(1<<20))
	}
}

// Q2, the seed's librdkafka case: kcat ignores throttle_time_ms (it sends
// again at once) and is held to client.producer_byte_rate all the same,
// ±10 %: 11 MiB past the first window's burst take 11 s.
func TestQuotaKcatHeldToRate(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 1MiB }\n")
	var in strings.Builder
	line := make([]byte, 8<<10-1)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	for i := 0; i < 12*128; i++ { // 12 MiB
		in.Write(line)
		in.WriteByte('\n')
	}
	args := env.kcatArgs("acme-app", "-P", "-t", "orders", "-p", "0", "-X", "linger.ms=5", "-X", "batch.size=65536", "-X", "message.timeout.ms=60000")
	// The time is counted from the first Produce the gateway forwards, where
	// the quota's count begins: kcat's start, its metadata and the gateway's
	// broker dials (slow against a real broker over SASL_SSL) are not in it.
	first := make(chan time.Time, 1)
	stop := make(chan struct{})
	acme := env.e.env.Signals.Tenant("shop", "acme")
	go func() {
		for acme.Bytes(signals.DirProduce) == 0 {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
		first <- time.Now()
	}()
	start := time.Now()
	_, stderr, err := runExt(t, 30*time.Second, in.String(), "/usr/bin/kcat", args...)
	end := time.Now()
	close(stop)
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, stderr)
	}
	var began time.Time
	select {
	case began = <-first:
	case <-time.After(time.Second):
		t.Fatal("kcat ran, and no Produce was counted")
	}
	took := end.Sub(began)
	t.Logf("kcat's set-up: %v", began.Sub(start).Round(time.Millisecond))
	// The bytes the quota counted (whole Produce frames), less the burst.
	body := metricsText(t, env.e)
	var sent float64
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, `flexway_kafka_bytes_total{cluster="shop",tenant="acme",direction="produce"} `) {
			_, _ = fmt.Sscan(strings.Fields(l)[1], &sent)
		}
	}
	want := time.Duration((sent - (1 << 20)) / (1 << 20) * float64(time.Second))
	t.Logf("kcat: %.1f MiB in %v, want about %v", sent/(1<<20), took, want)
	if sent < 12<<20 || !within(took.Seconds(), want.Seconds(), 0.10) {
		t.Errorf("kcat took %v for %.1f MiB: want %v ±10 %%", took, sent/(1<<20), want)
	}
}
