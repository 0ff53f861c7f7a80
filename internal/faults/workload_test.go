// The clients of the fault tests: an idempotent franz-go producer (acks=all,
// library defaults otherwise) and a consumer group, writing and reading
// the quickstart's topic orders (acme.orders on the broker) through the
// gateway, and the checks made after a fault: every acknowledged record on
// the broker exactly once, in order per partition, read by the group.
package faults

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// workload is one producer and one consumer group member on a gateway.
type workload struct {
	t         *testing.T
	mu        sync.Mutex
	sent      int           // records handed to the producer, values 0..sent-1
	acked     map[int]int32 // values the broker acknowledged, and their partition
	failed    map[int]error // values the producer gave up on
	read      map[int]int   // values the group read, and how often
	fetchErrs int

	prod, cons         *kgo.Client
	stopProd, stopCons context.CancelFunc
	wg                 sync.WaitGroup
}

// value is the record value of n: ordered as n is, padded to size bytes.
func value(n, size int) []byte {
	v := fmt.Appendf(nil, "%010d", n)
	for len(v) < size {
		v = append(v, '.')
	}
	return v
}

// javaBase is added to the n of the Java client's records: a test with
// both producers tells their records apart (and checks each one's order on
// its own).
const javaBase = 1 << 40

// valueN is the n of a record's value: value(n, size)'s, or javaBase plus
// the n of the Java client's "<prefix>-<n>".
func valueN(v []byte) int {
	if i := bytes.LastIndexByte(v, '-'); i >= 0 {
		n, _ := strconv.Atoi(string(v[i+1:]))
		return javaBase + n
	}
	n, _ := strconv.Atoi(string(v[:min(len(v), 10)]))
	return n
}

// startWorkload starts the producer (a record of size bytes every period;
// none with period 0, the test sends records itself) and the group member
// on gw; both are closed at the test's end.
func startWorkload(t *testing.T, gw *gateway, period time.Duration, size int) *workload {
	t.Helper()
	w := &workload{t: t, acked: map[int]int32{}, failed: map[int]error{}, read: map[int]int{}}
	client := func(id string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(gw.bootstrap()),
			kgo.SASL(plain.Auth{User: id, Pass: quickstartKey(t, id)}.AsMechanism()))...)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	w.prod = client("acme-orders-producer", kgo.DefaultProduceTopic("orders"))
	w.cons = client("acme-orders-reader", kgo.ConsumerGroup("faults"), kgo.ConsumeTopics("orders"))
	pctx, stopProd := context.WithCancel(context.Background())
	cctx, stopCons := context.WithCancel(context.Background())
	w.stopProd, w.stopCons = stopProd, stopCons
	w.wg.Add(1)
	go w.consume(cctx)
	if period > 0 {
		w.wg.Add(1)
		go w.produce(pctx, period, size)
	}
	t.Cleanup(func() {
		w.stopProd()
		w.stopCons()
		w.prod.Close()
		w.cons.Close()
		w.wg.Wait()
	})
	return w
}

func (w *workload) produce(ctx context.Context, period time.Duration, size int) {
	defer w.wg.Done()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.mu.Lock()
		w.sent++
		w.mu.Unlock()
		w.prod.Produce(context.Background(), &kgo.Record{Value: value(n, size)}, func(r *kgo.Record, err error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if err != nil {
				w.failed[valueN(r.Value)] = err
				return
			}
			w.acked[valueN(r.Value)] = r.Partition
		})
	}
}

func (w *workload) consume(ctx context.Context) {
	defer w.wg.Done()
	for ctx.Err() == nil {
		fs := w.cons.PollFetches(ctx)
		w.mu.Lock()
		fs.EachError(func(string, int32, error) {
			if ctx.Err() == nil {
				w.fetchErrs++
			}
		})
		fs.EachRecord(func(r *kgo.Record) { w.read[valueN(r.Value)]++ })
		w.mu.Unlock()
	}
}

// ackedCount is the number of records acknowledged so far.
func (w *workload) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitAcked waits until n more records than now are acknowledged: the
// clients write through the gateway.
func (w *workload) waitAcked(n int, within time.Duration) {
	w.t.Helper()
	want := w.ackedCount() + n
	waitFor(w.t, within, fmt.Sprintf("%d records acknowledged", want), func() bool { return w.ackedCount() >= want })
}

// readCount is the number of distinct records the group has read so far.
func (w *workload) readCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.read)
}

// readJavaCount is the number of distinct records of the Java client the
// group has read so far.
func (w *workload) readJavaCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := 0
	for n := range w.read {
		if n >= javaBase {
			k++
		}
	}
	return k
}

// waitRead waits until the group has read n more records than now: a
// producer other than the workload's writes through the gateway, and the
// group reads.
func (w *workload) waitRead(n int, within time.Duration) {
	w.t.Helper()
	want := w.readCount() + n
	waitFor(w.t, within, fmt.Sprintf("%d records read by the group", want), func() bool { return w.readCount() >= want })
}

// finish stops the producer, flushes what it holds (a minute at most),
// and waits until the group has read every acknowledged record; no record
// may have failed (the producer recovers within its own retry budget).
func (w *workload) finish() {
	t := w.t
	t.Helper()
	w.stopProd()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.prod.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	w.mu.Lock()
	sent, acked, failed := w.sent, len(w.acked), len(w.failed)
	for n, err := range w.failed {
		t.Errorf("record %d failed: %v", n, err)
		break
	}
	w.mu.Unlock()
	if failed > 0 || acked != sent {
		t.Fatalf("%d records sent, %d acknowledged, %d failed", sent, acked, failed)
	}
	waitFor(t, time.Minute, "the group read every acknowledged record", func() bool { return len(w.unread()) == 0 })
}

// unread counts the acknowledged records the group has not read, by
// partition.
func (w *workload) unread() map[int32]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int32]int{}
	first := -1
	for n, p := range w.acked {
		if w.read[n] == 0 {
			out[p]++
			if first < 0 || n < first {
				first = n
			}
		}
	}
	if len(out) > 0 {
		w.t.Logf("unread by partition: %v, the first %d of %d sent", out, first, w.sent)
	}
	return out
}

// onBroker reads topic on brokers directly, to its end offsets: each
// acknowledged record is there exactly once, in order in its partition,
// and nothing else is.
func (w *workload) onBroker(brokers []string, topic string) {
	t := w.t
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	ends.Each(func(o kadm.ListedOffset) { total += int(o.Offset) })
	seen := map[int]int{}
	type source struct { // a partition, and the producer the record is of
		p    int32
		java bool
	}
	last := map[source]int{}
	for got := 0; got < total; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records on the broker: %v", got, total, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			n := valueN(r.Value)
			seen[n]++
			s := source{r.Partition, n >= javaBase}
			if prev, ok := last[s]; ok && n <= prev {
				t.Errorf("partition %d: record %d after %d", r.Partition, n, prev)
			}
			last[s] = n
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lost, twice := 0, 0
	for n := range w.acked {
		if seen[n] == 0 {
			lost++
		}
	}
	for _, k := range seen {
		if k > 1 {
			twice++
		}
	}
	if lost > 0 || twice > 0 || total != len(w.acked) {
		t.Fatalf("%d acknowledged, %d records on the broker: %d lost, %d written twice", len(w.acked), total, lost, twice)
	}
	t.Logf("%d records acknowledged, each once on the broker in order, all read by the group (%d fetch errors seen)", total, w.fetchErrs)
}
