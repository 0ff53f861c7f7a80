package engine

// Helpers of the quota tests, several shared with the flow, stream, splice
// and client library tests: raw Produce, Fetch and Metadata requests and
// their answers, the quotas reloaded, the metrics read, and the meter that
// measures a rate over time from franz-go's hooks.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
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
	e.env.Signals.Metrics().WritePrometheus(&b)
	return b.String()
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
