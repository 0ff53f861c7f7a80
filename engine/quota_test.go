package engine

// Quotas as the protocol carries them (Q1, Q2, issues 22.2, 22.5), on raw
// requests: the throttled answer at once then the silence, a reload that
// lowers a rate, a Fetch in debt not forwarded (and the Fetch forwarded
// asking no more than the bucket), a broker's own throttle, and the
// silence counted from the answer.

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
