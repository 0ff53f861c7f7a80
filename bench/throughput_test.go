package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const (
	recordSize  = 1024
	recordCount = 200_000 // per measured phase: 200 MiB
	warmupCount = 10_000
	rounds      = 4
	phaseLimit  = 60 * time.Second
)

// phase is one measured run: wall time and the process's CPU time
// (user+sys, RUSAGE_SELF: clients, gateway and kfake all run in-process).
type phase struct {
	wall time.Duration
	cpu  time.Duration
	n    int
}

func (p phase) bytes() float64     { return float64(p.n) * recordSize }
func (p phase) mibps() float64     { return p.bytes() / (1 << 20) / p.wall.Seconds() }
func (p phase) recps() float64     { return float64(p.n) / p.wall.Seconds() }
func (p phase) cpuPerGiB() float64 { return p.cpu.Seconds() / (p.bytes() / (1 << 30)) }

// pool holds the records' values, distinct and incompressible: record i
// is the i-th KiB of 4 MiB of random bytes, more than a batch.
var pool = func() []byte {
	p := make([]byte, 4<<20)
	rand.Read(p)
	return p
}()

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func measure(f func() int) phase {
	runtime.GC()
	c0, t0 := cpuTime(), time.Now()
	n := f()
	return phase{wall: time.Since(t0), cpu: cpuTime() - c0, n: n}
}

func newClient(b *testing.B, opts ...kgo.Opt) *kgo.Client {
	b.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// produce sends count records of recordSize asynchronously and waits
// for every acknowledgement.
func produce(b *testing.B, opts []kgo.Opt, topic string, count int) int {
	b.Helper()
	cl := newClient(b, append(opts,
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent: the default
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), phaseLimit)
	defer cancel()
	var (
		wg    sync.WaitGroup
		ok    atomic.Int64
		errMu sync.Mutex
		first error
	)
	wg.Add(count)
	for i := 0; i < count; i++ {
		off := (i * recordSize) % len(pool)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+recordSize]}, func(_ *kgo.Record, err error) {
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
			} else {
				ok.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatalf("produce to %s: %d of %d acknowledged, first error: %v", topic, ok.Load(), count, first)
	}
	return int(ok.Load())
}

// consume reads topic from the start until count records.
func consume(b *testing.B, opts []kgo.Opt, topic string, count int) int {
	b.Helper()
	cl := newClient(b, append(opts,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), phaseLimit)
	defer cancel()
	n := 0
	for n < count {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consume %s: %d of %d records within %v", topic, n, count, phaseLimit)
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				b.Logf("fetch error %s/%d: %v", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != recordSize {
				b.Fatalf("record of %d bytes, want %d", len(r.Value), recordSize)
			}
			n++
		})
	}
	return n
}

// trim deletes every record of topic (DeleteRecords up to the end
// offsets), so that kfake frees their memory.
func trim(b *testing.B, brokers []string, topic string) {
	b.Helper()
	cl := newClient(b, kgo.SeedBrokers(brokers...))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		b.Fatalf("end offsets of %s: %v", topic, err)
	}
	res, err := adm.DeleteRecords(ctx, ends.Offsets())
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		b.Fatalf("delete records of %s: %v", topic, err)
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// BenchmarkLoopbackThroughput produces then consumes recordCount records of
// 1 KiB on loopback, first straight to the embedded kfake broker
// (acme.orders), then through the gateway (orders, SASL PLAIN as acme), and
// prints both side by side. The gateway runs in-process: the CPU difference
// between the two paths is, roughly, the gateway's own cost.
//
// A small warm-up round (connections, producer ids, heap) comes first, then
// `rounds` measured rounds: MiB/s and records/s are the fastest round's,
// CPU the median round's. kfake keeps every record in memory, without
// bound: each round starts by deleting the records before it (DeleteRecords
// frees kfake's segments, 100 MiB each), so it holds about 400 MiB at most.
//
//	go test ./bench -run '^$' -bench LoopbackThroughput -benchtime 1x -timeout 10m
func BenchmarkLoopbackThroughput(b *testing.B) {
	for i := 0; i < b.N; i++ {
		g := startGateway(b)
		direct := []kgo.Opt{kgo.SeedBrokers(g.direct...)}
		gw := []kgo.Opt{
			kgo.SeedBrokers(g.boot),
			kgo.SASL(plain.Auth{User: g.keyID, Pass: g.key}.AsMechanism()),
		}
		// Warm-up, not measured.
		produce(b, direct, "acme.orders", warmupCount)
		consume(b, direct, "acme.orders", warmupCount)
		produce(b, gw, "orders", warmupCount)
		consume(b, gw, "orders", warmupCount)

		// Every consumer reads the first recordCount records of acme.orders,
		// the same data on both paths.
		var dp, dc, gp, gc []phase
		for r := 0; r < rounds; r++ {
			trim(b, g.direct, "acme.orders")
			dp = append(dp, measure(func() int { return produce(b, direct, "acme.orders", recordCount) }))
			dc = append(dc, measure(func() int { return consume(b, direct, "acme.orders", recordCount) }))
			gp = append(gp, measure(func() int { return produce(b, gw, "orders", recordCount) }))
			gc = append(gc, measure(func() int { return consume(b, gw, "orders", recordCount) }))
		}
		mdp, mdc, mgp, mgc := summary(dp), summary(dc), summary(gp), summary(gc)

		b.ReportMetric(mdp.mibps(), "direct_produce_MiB/s")
		b.ReportMetric(mgp.mibps(), "gw_produce_MiB/s")
		b.ReportMetric(mgp.mibps()/mdp.mibps(), "ratio_produce")
		b.ReportMetric(mdc.mibps(), "direct_consume_MiB/s")
		b.ReportMetric(mgc.mibps(), "gw_consume_MiB/s")
		b.ReportMetric(mgc.mibps()/mdc.mibps(), "ratio_consume")

		fmt.Printf("\n%s, GOMAXPROCS=%d, CPU %s, %d records of %d B (%d MiB) per phase; best of %d rounds, median CPU\n",
			runtime.Version(), runtime.GOMAXPROCS(0), cpuModel(), recordCount, recordSize, recordCount*recordSize>>20, rounds)
		fmt.Printf("%-8s %-8s %7s %8s %10s %7s %9s   %s\n", "phase", "path", "wall s", "MiB/s", "records/s", "CPU s", "CPU s/GiB", "MiB/s per round")
		row := func(ph, path string, m phase, all []phase) {
			var per []string
			for _, p := range all {
				per = append(per, fmt.Sprintf("%.0f", p.mibps()))
			}
			fmt.Printf("%-8s %-8s %7.2f %8.1f %10.0f %7.2f %9.2f   %s\n", ph, path, m.wall.Seconds(), m.mibps(), m.recps(), m.cpu.Seconds(), m.cpuPerGiB(), strings.Join(per, " "))
		}
		row("produce", "direct", mdp, dp)
		row("produce", "gateway", mgp, gp)
		row("consume", "direct", mdc, dc)
		row("consume", "gateway", mgc, gc)
		fmt.Printf("gateway/direct MiB/s: produce %.2f, consume %.2f\n", mgp.mibps()/mdp.mibps(), mgc.mibps()/mdc.mibps())
		fmt.Printf("gateway's share, CPU s/GiB (gateway - direct): produce %+.2f, consume %+.2f\n\n",
			mgp.cpuPerGiB()-mdp.cpuPerGiB(), mgc.cpuPerGiB()-mdc.cpuPerGiB())
	}
}

// summary returns the fastest round's wall time (other processes on the
// machine only ever slow a round down) with the median CPU time.
func summary(ps []phase) phase {
	w := append([]phase(nil), ps...)
	sort.Slice(w, func(i, j int) bool { return w[i].wall < w[j].wall })
	c := append([]phase(nil), ps...)
	sort.Slice(c, func(i, j int) bool { return c[i].cpu < c[j].cpu })
	m := w[0]
	m.cpu = c[len(c)/2].cpu
	return m
}
