package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawProduce is a Produce of n bytes of records (never decoded by the
// gateway) to the tenant's orders, partition 0, acks=1.
func rawProduce(n int) *kmsg.ProduceRequest {
	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis = 9, 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = bytes.Repeat([]byte{1}, n)
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	return pr
}

func produceAnswer() *kmsg.ProduceResponse {
	r := kmsg.NewPtrProduceResponse()
	r.Version = 9
	return r
}

// rawFetch asks the tenant's orders, partitions 0 and 1, from offset 0.
func rawFetch(maxBytes int32) *kmsg.FetchRequest {
	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.ReplicaID, fr.MaxWaitMillis, fr.MaxBytes = 12, -1, 100, maxBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	for p := int32(0); p < 2; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, maxBytes
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	return fr
}

func fetchAnswer() *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.Version = 12
	return r
}

// reloadQuotas rewrites the env's listeners.kafka.quotas (the lines given,
// 4 spaces of indent, "" for none) and reloads.
func reloadQuotas(t *testing.T, env *testEnv, quotas string) {
	t.Helper()
	path := filepath.Join(env.dir, "flexway.yaml")
	b, err := os.ReadFile(path)
	must(t, err)
	s := string(b)
	if i := strings.Index(s, "    quotas:\n"); i >= 0 {
		j := strings.Index(s[i:], "    plaintext:\n")
		s = s[:i] + s[i+j:]
	}
	s = strings.Replace(s, "    plaintext:\n", quotas+"    plaintext:\n", 1)
	must(t, os.WriteFile(path, []byte(s), 0o600))
	snap, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.e.Reload(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
}

// Q2: past producer_byte_rate the answer comes at once carrying
// throttle_time_ms, then the connection is not read for that long: a
// client that ignores the field (it sends again at once) waits anyway.
func TestQuotaThrottleThenMute(t *testing.T) {
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 100KiB }\n      window: 1s\n")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	// The broker connection set up first (against a real broker over
	// SASL_SSL its dial is slow): the time below is the answer's alone.
	servedOrders(t, r)
	// 300 KiB: 200 KiB past the bucket, 2 s at 100 KiB/s.
	start := time.Now()
	r.send(rawProduce(300 << 10))
	a := produceAnswer()
	r.recv(a)
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("the throttled answer took %v: it must leave at once", took)
	}
	if a.ThrottleMillis < 1800 || a.ThrottleMillis > 2200 {
		t.Fatalf("throttle_time_ms = %d, want about 2000", a.ThrottleMillis)
	}
	// Ignoring the field: a Metadata at once waits the throttle out.
	sent := time.Now()
	metadataRoundTrip(r)
	if waited := time.Since(sent); waited < 1700*time.Millisecond {
		t.Errorf("answered after %v: the connection must not be read during the throttle (2 s)", waited)
	}
	body := metricsText(t, env.e)
	for _, want := range []string{
		`flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="producer_byte_rate",scope="client"} 1`,
		`flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Produce",decision="throttled",cause="quota"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.Contains(body, `flexway_kafka_bytes_total{cluster="shop",tenant="acme",direction="produce"} 3`) {
		t.Errorf("metrics lack the produced bytes")
	}
}

// metadataRoundTrip asks a Metadata (v4, every topic) on r and reads its
// answer.
func metadataRoundTrip(r *rawConn) {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	r.send(md)
	mr := kmsg.NewPtrMetadataResponse()
	mr.Version = 4
	r.recv(mr)
}

// metricsText is the engine's exposition.
func metricsText(t *testing.T, e *Engine) string {
	t.Helper()
	var b bytes.Buffer
	e.m.Metrics().WritePrometheus(&b)
	return b.String()
}

// Q1: a reload that lowers a rate applies at the next request; what the
// principal spent and has not paid yet is kept.
func TestQuotaReloadLowersRate(t *testing.T) {
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 1MiB }\n")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.send(rawProduce(900 << 10)) // within the 1 s bucket: not throttled
	a := produceAnswer()
	r.recv(a)
	if a.ThrottleMillis != 0 {
		t.Fatalf("throttled within the bucket: %d ms", a.ThrottleMillis)
	}
	reloadQuotas(t, env, "    quotas:\n      client: { producer_byte_rate: 100KiB }\n      max_throttle: 30s\n")
	r.send(rawProduce(100 << 10))
	a = produceAnswer()
	r.recv(a)
	// At the old rate this is within the bucket (0); forgetting what was
	// spent, 100 KiB at 100 KiB/s fills the new bucket (0). Kept and
	// counted at the new rate: about 900 KiB still owed, 9 s, less what
	// was paid during the reload.
	if a.ThrottleMillis < 5000 || a.ThrottleMillis > 9500 {
		t.Errorf("throttle_time_ms after the reload = %d, want about 9000", a.ThrottleMillis)
	}
}

// Q2: a Fetch of a principal in debt gets an empty answer at once with
// throttle_time_ms, and the broker is not asked. Issue 22.2: the Fetch
// forwarded asks for no more than the bucket holds; a record batch larger
// than the bucket still crosses whole (as a broker gives one batch past
// any bound, KIP-74), and its excess is the debt.
func TestQuotaFetchInDebtNotForwarded(t *testing.T) {
	skipOnRealKafka(t)
	// One broker: the bootstrap's connection reaches the partitions' leader.
	env := newTestEnvWith(t, envConfig{
		listenerExtra: "    quotas:\n      client: { consumer_byte_rate: 100KiB }\n      max_throttle: 300ms\n",
		upstream:      "    embedded: { brokers: 1, partitions: 2 }\n",
	})
	var fetches, askedMax atomic.Int64
	kf := kfakeOf(t, env)
	kf.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		fetches.Add(1)
		var sum int64 // what the partitions may bring together
		for _, ft := range req.(*kmsg.FetchRequest).Topics {
			for _, fp := range ft.Partitions {
				sum += int64(fp.PartitionMaxBytes)
			}
		}
		askedMax.Store(sum)
		return nil, nil, false
	})
	prod := env.client("acme-orders-producer", kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceN(t, prod, "orders", 1, strings.Repeat("x", 800<<10)) // one batch of 800 KiB: 8 s at the rate
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.send(rawFetch(50 << 20))
	a := fetchAnswer()
	r.recv(a)
	got := 0
	for _, tp := range a.Topics {
		for _, p := range tp.Partitions {
			got += len(p.RecordBatches)
		}
	}
	if m := askedMax.Load(); m <= 0 || m > 100<<10 {
		t.Errorf("the broker was asked for %d bytes over the partitions: want at most the bucket's 100 KiB", m)
	}
	if got < 800<<10 || a.ThrottleMillis != 300 {
		t.Fatalf("first answer: %d bytes of records, throttle %d ms (want the 800 KiB batch, 300 ms capped)", got, a.ThrottleMillis)
	}
	before := fetches.Load()
	// Still in debt (about 7 s) after the capped 300 ms: empty answers,
	// each at once after the silence, none forwarded.
	for i := 0; i < 3; i++ {
		r.send(rawFetch(1 << 20))
		a = fetchAnswer()
		r.recv(a)
		if len(a.Topics) != 0 || a.ErrorCode != 0 || a.ThrottleMillis != 300 {
			t.Fatalf("answer in debt: %d topics, error %d, throttle %d ms: want an empty answer, NONE, 300 ms", len(a.Topics), a.ErrorCode, a.ThrottleMillis)
		}
	}
	if n := fetches.Load(); n != before {
		t.Errorf("the broker saw %d Fetches in debt", n-before)
	}
	if body := metricsText(t, env.e); !strings.Contains(body, `flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="consumer_byte_rate",scope="client"} 4`) {
		t.Errorf("throttle histogram:\n%s", grepLines(body, "throttle_seconds_count"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Q2: a broker that throttles the gateway: the client gets the larger of
// the two delays, and nothing reaches that broker connection before the
// broker's delay ends.
func TestQuotaBrokerThrottle(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 100KiB }\n")
	kf := kfakeOf(t, env)
	var mu sync.Mutex
	var seen []time.Time
	kf.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		mu.Lock()
		seen = append(seen, time.Now())
		mu.Unlock()
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range pr.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		resp.ThrottleMillis = 1500 // the broker's quota on the gateway's principal
		return resp, nil, true
	})
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.send(rawProduce(150 << 10)) // the gateway's own throttle: about 500 ms
	a := produceAnswer()
	r.recv(a)
	got := time.Now()
	if a.ThrottleMillis != 1500 {
		t.Fatalf("throttle_time_ms = %d, want the broker's 1500 (the larger)", a.ThrottleMillis)
	}
	r.send(rawProduce(100)) // at once: it must not reach the broker before 1.5 s
	a = produceAnswer()
	r.recv(a)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("the broker saw %d Produce requests, want 2", len(seen))
	}
	if gap := seen[1].Sub(got); gap < 1400*time.Millisecond {
		t.Errorf("the next request reached the broker %v after the throttled answer, before the broker's 1.5 s", gap)
	}
	if body := metricsText(t, env.e); !strings.Contains(body, `flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="broker",scope="broker"}`) {
		t.Errorf("no broker throttle counted:\n%s", grepLines(body, "throttle_seconds_count"))
	}
}

// meter counts bytes over time, from any goroutine.
type meter struct {
	mu     sync.Mutex
	start  time.Time
	events []meterEvent
}

type meterEvent struct {
	at time.Duration
	n  int
}

func newMeter() *meter { return &meter{start: time.Now()} }

func (m *meter) add(n int) {
	m.mu.Lock()
	m.events = append(m.events, meterEvent{time.Since(m.start), n})
	m.mu.Unlock()
}

// window is a context that ends d after the meter's first count (the
// set-up, slower against a real broker, is not in it), or d + 30 s after
// now if nothing is ever counted.
func (m *meter) window(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			m.mu.Lock()
			started := len(m.events) > 0
			var first time.Duration
			if started {
				first = m.events[0].at
			}
			m.mu.Unlock()
			if started {
				select {
				case <-ctx.Done():
				case <-time.After(time.Until(m.start.Add(first + d))):
					cancel()
				}
				return
			}
		}
	}()
	return ctx, cancel
}

// rate is the bytes per second counted between from and to after the
// first count (the connection's set-up is not in it; the first window's
// burst is, at the start, and from skips it).
func (m *meter) rate(from, to time.Duration) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := 0
	if len(m.events) == 0 {
		return 0
	}
	first := m.events[0].at
	if last := m.events[len(m.events)-1].at - first; last < to-time.Second/2 {
		return 0 // the run ended before the span: no figure
	}
	for _, e := range m.events {
		if at := e.at - first; at >= from && at < to {
			total += e.n
		}
	}
	return float64(total) / (to - from).Seconds()
}

// fetchReadHook counts the bytes of the Fetch answers a franz-go client
// reads.
type fetchReadHook struct{ m *meter }

func (h *fetchReadHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		h.m.add(n)
	}
}

// throttleHook counts the throttles a franz-go client read.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// produceFlatOut produces records of size bytes as fast as the client
// goes, until ctx ends; each acknowledged record is counted by m, each
// failed one by errs.
func produceFlatOut(ctx context.Context, cl *kgo.Client, size int, m *meter, errs *atomic.Int64) {
	val := make([]byte, size)
	for i := range val {
		val[i] = byte(i * 7)
	}
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: "orders", Value: val}, func(r *kgo.Record, err error) {
			switch {
			case err == nil:
				m.add(len(r.Value))
			case ctx.Err() == nil:
				errs.Add(1)
			}
		})
	}
}

// producerOpts make small requests (a throttle per 64 KiB, not per MiB),
// uncompressed (the bytes counted are the bytes sent), with a client
// request timeout above max_throttle.
func producerOpts(h *throttleHook) []kgo.Opt {
	return []kgo.Opt{
		kgo.ProducerBatchMaxBytes(64 << 10),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(64),
		kgo.RequestTimeoutOverhead(4 * time.Second),
		kgo.WithHooks(h),
	}
}

func within(got, want, tol float64) bool { return got >= want*(1-tol) && got <= want*(1+tol) }

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
	acme := env.e.m.Tenant("shop", "acme")
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

// Q3's shared buckets, through the quota.Store contract: two gateways
// (two replicas) counting a tenant's bucket in one store hold the
// tenant's summed rate, ±10 %. (The store here is in-process and exact;
// server.counters' Redis store reconciles every sync.)
func TestQuotaReplicasShareTenantRate(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	shared := quota.NewLocal()
	m := newMeter()
	ctx, cancel := m.window(13 * time.Second)
	defer cancel()
	var errs atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		env := newTestEnv(t, "    quotas:\n      tenant: { producer_byte_rate: 1MiB }\n", WithCounters(shared))
		cl := env.client("acme-app", producerOpts(&throttleHook{})...)
		wg.Add(1)
		go func() { defer wg.Done(); produceFlatOut(ctx, cl, 8<<10, m, &errs) }()
	}
	wg.Wait()
	got := m.rate(2*time.Second, 12*time.Second)
	t.Logf("two replicas together: %.3f MiB/s", got/(1<<20))
	if !within(got, 1<<20, 0.10) {
		t.Errorf("two replicas together: %.3f MiB/s, want the tenant's 1 MiB/s ±10 %%", got/(1<<20))
	}
	if errs.Load() != 0 {
		t.Errorf("%d records failed", errs.Load())
	}
}

// Issue 8 items 4/5, Q3: two gateways (two replicas), each with its own
// server.counters store on ONE real redis-server, hold a tenant's summed
// rate, and one key's (issue 22.3: a principal's buckets are shared too),
// within one sync window of the quota: over 10 s, the bytes both let
// through are at most rate × (10 s + sync) + the bucket's burst (rate ×
// window), and at least 0.8 × rate × 10 s. With the default sync (1s) and
// a short one. The 10 s are measured after the start (4 s): until each
// replica has learned the other's spending (two syncs at most) both run
// alone from a full bucket, and then pay that back (DESIGN.md, invariant 32).
func TestQuotaReplicasShareTenantRateRedis(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	for _, c := range []struct {
		scope, quotas string
		every         time.Duration
	}{
		{"tenant", "tenant: { producer_byte_rate: 1MiB }", time.Second},
		{"tenant", "tenant: { producer_byte_rate: 1MiB }", 200 * time.Millisecond},
		// Issue 22.3: one key on two gateways is held to its one rate.
		{"client", "client: { producer_byte_rate: 1MiB }", time.Second},
	} {
		every := c.every
		t.Run(c.scope+"/"+every.String(), func(t *testing.T) {
			t.Parallel()
			srv := testkit.StartRedis(t)
			m := newMeter()
			ctx, cancel := m.window(15 * time.Second)
			defer cancel()
			var errs atomic.Int64
			var wg sync.WaitGroup
			// Both replicas set up before either produces: the second's
			// set-up (its topics on a real broker) would otherwise start it
			// seconds late, inside the measured span, from a full bucket.
			var cls []*kgo.Client
			for i := 0; i < 2; i++ {
				store, err := counters.Open(srv.URL(), every, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { store.Close() })
				env := newTestEnv(t, "    quotas:\n      "+c.quotas+"\n", WithCounters(store))
				cls = append(cls, env.client("acme-app", producerOpts(&throttleHook{})...))
			}
			for _, cl := range cls {
				wg.Add(1)
				go func() { defer wg.Done(); produceFlatOut(ctx, cl, 8<<10, m, &errs) }()
			}
			wg.Wait()
			const rate, from, span = 1 << 20, 4 * time.Second, 10 * time.Second
			got := m.rate(from, from+span) * span.Seconds()
			most := rate*(span+every).Seconds() + rate*1 // + the burst: window 1s
			least := 0.8 * rate * span.Seconds()
			t.Logf("sync %v: two replicas on one redis let %.2f MiB through in %v (%.3f MiB/s), want %.2f..%.2f MiB; KiB each second from the first: %v",
				every, got/(1<<20), span, got/(1<<20)/span.Seconds(), least/(1<<20), most/(1<<20), m.perSecond(from+span))
			if got > most || got < least {
				t.Errorf("sync %v: %.2f MiB in %v, want at most rate × (%v + sync) + burst = %.2f MiB and at least %.2f MiB",
					every, got/(1<<20), span, span, most/(1<<20), least/(1<<20))
			}
			if errs.Load() != 0 {
				t.Errorf("%d records failed", errs.Load())
			}
		})
	}
}

// perSecond is the KiB counted in each second after the first count, up to
// to.
func (m *meter) perSecond(to time.Duration) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, int(to/time.Second))
	if len(m.events) == 0 {
		return out
	}
	first := m.events[0].at
	for _, e := range m.events {
		if i := int((e.at - first) / time.Second); i < len(out) {
			out[i] += e.n >> 10
		}
	}
	return out
}

// Q2, issue 22.5 (KIP-219): the silence a throttle announces begins when
// the answer leaves, not when the request was forwarded. The broker holds
// the Produce 1.5 s; its answer carries a throttle of about 1 s; a
// Metadata sent as that answer comes is answered no sooner than the
// throttle after it (before, the silence had run out at the broker). The
// throttle counted in flexway_kafka_throttle_seconds is the answer's own.
func TestQuotaSilenceFromTheAnswer(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 100KiB }\n      window: 1s\n")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	kf := kfakeOf(t, env)
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.DropControl()
		kf.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
		return nil, nil, false
	})
	r.send(rawProduce(200 << 10)) // 100 KiB past the bucket: 1 s at 100 KiB/s
	a := produceAnswer()
	r.recv(a)
	answered := time.Now()
	if a.ThrottleMillis < 900 || a.ThrottleMillis > 1100 {
		t.Fatalf("throttle_time_ms = %d, want about 1000", a.ThrottleMillis)
	}
	metadataRoundTrip(r)
	if waited := time.Since(answered); waited < time.Duration(a.ThrottleMillis)*time.Millisecond-50*time.Millisecond {
		t.Errorf("the Metadata was answered %v after the throttled answer: the silence (%d ms) begins when the answer leaves", waited, a.ThrottleMillis)
	}
	const sum = `flexway_kafka_throttle_seconds_sum{cluster="shop",tenant="acme",quota="producer_byte_rate",scope="client"} `
	body := metricsText(t, env.e)
	i := strings.Index(body, sum)
	if i < 0 {
		t.Fatalf("no throttle counted:\n%s", grepLines(body, "throttle_seconds"))
	}
	got, err := strconv.ParseFloat(strings.Fields(body[i+len(sum):])[0], 64)
	if err != nil || math.Abs(got-float64(a.ThrottleMillis)/1000) > 1e-6 {
		t.Errorf("throttle counted %v s (%v), the answer carried %d ms", got, err, a.ThrottleMillis)
	}
}
