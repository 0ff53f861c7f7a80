// Command loadgen is the franz-go load generator of the benchmark harness
// (bench/run): it produces N records of S bytes to a topic, waits for every
// acknowledgement, then (unless -consume=false) consumes N records of the
// topic from the start, and prints one RESULT line per phase:
//
//	RESULT phase=produce records=N seconds=T rec_s=X mib_s=Y p50_ms=A p90_ms=B p95_ms=C p99_ms=D p999_ms=E
//	RESULT phase=consume records=N seconds=T rec_s=X mib_s=Y
//
// Produce latency is per record, from Produce to its acknowledgement (as
// kafka-producer-perf-test measures it). Direct to a broker:
//
//	loadgen -brokers 127.0.0.1:18092 -topic perf -n 300000 -size 1024
//
// through the gateway (SASL PLAIN, the API key's id and the key):
//
//	loadgen -brokers 127.0.0.1:29092 -user bench-acme -pass KEY -topic perf ...
//
// -fetch-max-bytes and -partition-fetch-bytes set the consumer's
// fetch.max.bytes and max.partition.fetch.bytes (0: franz-go's defaults, 50 MiB
// and 1 MiB); the large-fetch scenario of the harness uses 50 MiB and 10 MiB.
//
// -clients C (consume only) runs C consumers at once, each its own client
// (its own connections) reading N records of the topic from the start; the
// RESULT line then counts them all (records, mib_s over the wall time from
// the moment all are connected) and adds clients=C and the slowest and
// fastest consumer's seconds (slowest_s, fastest_s), the connections the
// clients opened (connects: a few per client, more when one reconnects) and the answers
// whose read failed (read_errors: a read timeout among them). The harness's
// many-consumers part (bench/cmd/harness/many.go) uses it.
//
// -rate R paces the producer at R records/s (checked about every ms), for
// latency at a fixed load; latencies are measured in microseconds, finer
// than kafka-producer-perf-test's milliseconds.
//
// -e2e FILE writes each Produce request's round trip as franz-go's hook
// sees it, a line each: the CLOCK_MONOTONIC ns its write ended, the ns until
// its answer was read (the harness's BENCH_PASSAGE=1).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"golang.org/x/sys/unix"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:18092", "seed brokers, comma-separated; the default is make kafka-start's broker (scripts/kafka-env.sh)")
	user := flag.String("user", "", "SASL PLAIN user (empty: no SASL)")
	pass := flag.String("pass", "", "SASL PLAIN password (or env LOADGEN_PASS)")
	topic := flag.String("topic", "perf", "topic")
	n := flag.Int("n", 100000, "records to produce (and to consume)")
	size := flag.Int("size", 1024, "record value size in bytes")
	acks := flag.String("acks", "all", "all | 1 (all: idempotent producer)")
	linger := flag.Duration("linger", 5*time.Millisecond, "producer linger")
	batch := flag.Int("batch", 1<<20, "producer batch max bytes")
	produce := flag.Bool("produce", true, "run the produce phase")
	consume := flag.Bool("consume", true, "run the consume phase")
	timeout := flag.Duration("timeout", 5*time.Minute, "limit of each phase")
	rate := flag.Int("rate", 0, "produce at this many records/s (0: as fast as the client goes)")
	fetchMax := flag.Int("fetch-max-bytes", 0, "consumer fetch.max.bytes (0: franz-go's default, 50 MiB)")
	partFetch := flag.Int("partition-fetch-bytes", 0, "consumer max.partition.fetch.bytes (0: franz-go's default, 1 MiB)")
	clients := flag.Int("clients", 1, "consumers at once, each its own client reading -n records (consume phase)")
	e2e := flag.String("e2e", "", "write each Produce request's round trip to this file (produce phase): per line, the CLOCK_MONOTONIC ns its write ended, the ns until its answer was read")
	flag.Parse()
	if *pass == "" {
		*pass = os.Getenv("LOADGEN_PASS")
	}

	opts := []kgo.Opt{kgo.SeedBrokers(splitComma(*brokers)...), kgo.ClientID("flexway-loadgen")}
	if *user != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: *user, Pass: *pass}.AsMechanism()))
	}
	if *produce {
		popts := opts
		var trips *roundTrips
		if *e2e != "" {
			trips = &roundTrips{}
			popts = append(popts, kgo.WithHooks(trips))
		}
		err := runProduce(popts, *topic, *n, *size, *acks, *linger, *batch, *rate, *timeout)
		if err == nil && trips != nil {
			err = trips.write(*e2e)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen produce:", err)
			os.Exit(1)
		}
	}
	if *consume {
		copts := opts
		if *fetchMax > 0 {
			copts = append(copts, kgo.FetchMaxBytes(int32(*fetchMax)))
		}
		if *partFetch > 0 {
			copts = append(copts, kgo.FetchMaxPartitionBytes(int32(*partFetch)))
		}
		if *clients > 1 {
			if err := runConsumers(copts, *topic, *n, *clients, *timeout); err != nil {
				fmt.Fprintln(os.Stderr, "loadgen consume:", err)
				os.Exit(1)
			}
			return
		}
		if err := runConsume(copts, *topic, *n, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen consume:", err)
			os.Exit(1)
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func runProduce(base []kgo.Opt, topic string, n, size int, acks string, linger time.Duration, batch, rate int, limit time.Duration) error {
	opts := append(base,
		kgo.ProducerLinger(linger),
		kgo.ProducerBatchMaxBytes(int32(batch)),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1<<16),
	)
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		return fmt.Errorf("-acks %q: want all or 1", acks)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Values: distinct, incompressible slices of a random pool.
	pool := make([]byte, 4<<20+size)
	rand.Read(pool)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	// Connect and learn the metadata first, outside the measure.
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	lat := make([]int64, n) // microseconds
	var (
		wg    sync.WaitGroup
		fail  atomic.Int64
		once  sync.Once
		first error
	)
	wg.Add(n)
	t0 := time.Now()
	step := max(1, rate/1000) // pace about once per millisecond
	for i := 0; i < n; i++ {
		if rate > 0 && i%step == 0 {
			// Paced: record i is due at t0 + i/rate.
			if d := time.Until(t0.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))); d > 0 {
				time.Sleep(d)
			}
		}
		off := (i * 4093) % (len(pool) - size)
		start := time.Now()
		idx := i
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+size]}, func(_ *kgo.Record, err error) {
			lat[idx] = time.Since(start).Microseconds()
			if err != nil {
				fail.Add(1)
				once.Do(func() { first = err })
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(t0)
	if first != nil {
		return fmt.Errorf("%d of %d records failed, first: %w", fail.Load(), n, first)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[min(int(p*float64(n)), n-1)]) / 1000 }
	fmt.Printf("RESULT phase=produce records=%d seconds=%.3f rec_s=%.1f mib_s=%.2f p50_ms=%.2f p90_ms=%.2f p95_ms=%.2f p99_ms=%.2f p999_ms=%.2f\n",
		n, el.Seconds(), float64(n)/el.Seconds(), float64(n)*float64(size)/(1<<20)/el.Seconds(), q(0.50), q(0.90), q(0.95), q(0.99), q(0.999))
	return nil
}

func runConsume(base []kgo.Opt, topic string, n int, limit time.Duration) error {
	cl, err := kgo.NewClient(append(base,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// franz-go's defaults unless -fetch-max-bytes / -partition-fetch-bytes:
		// 50 MiB per fetch, 1 MiB per partition
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	got, bytes := 0, int64(0)
	t0 := time.Now()
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d records within %v", got, n, limit)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	el := time.Since(t0)
	fmt.Printf("RESULT phase=consume records=%d seconds=%.3f rec_s=%.1f mib_s=%.2f\n",
		got, el.Seconds(), float64(got)/el.Seconds(), float64(bytes)/(1<<20)/el.Seconds())
	return nil
}

// runConsumers runs c consumers at once, each its own client reading n
// records of topic from the start: all connect first (Ping), then all start
// together; it prints one RESULT line for them all.
func runConsumers(base []kgo.Opt, topic string, n, c int, limit time.Duration) error {
	var hk connHooks
	base = append(base, kgo.WithHooks(&hk))
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cls := make([]*kgo.Client, 0, c)
	started := false
	defer func() {
		if started {
			return // each consumer closed its own client
		}
		for _, cl := range cls {
			cl.Close()
		}
	}()
	for i := 0; i < c; i++ {
		cl, err := kgo.NewClient(append(base,
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		)...)
		if err != nil {
			return err
		}
		cls = append(cls, cl)
		if err := cl.Ping(ctx); err != nil {
			return fmt.Errorf("consumer %d: ping: %w", i, err)
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		total int64
		bytes int64
		secs  = make([]float64, c)
	)
	start := make(chan struct{})
	for i, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			got, b, err := consumeN(ctx, cl, n)
			secs[i] = time.Since(t0).Seconds()
			// Closed at once: a client left open keeps fetching (one
			// answer more) while the others run.
			cl.Close()
			mu.Lock()
			defer mu.Unlock()
			total += int64(got)
			bytes += b
			if err != nil && first == nil {
				first = fmt.Errorf("consumer %d: %w", i, err)
			}
		}()
	}
	t0 := time.Now()
	started = true
	close(start)
	wg.Wait()
	el := time.Since(t0)
	if first != nil {
		return first
	}
	sort.Float64s(secs)
	fmt.Printf("RESULT phase=consume records=%d seconds=%.3f rec_s=%.1f mib_s=%.2f clients=%d slowest_s=%.3f fastest_s=%.3f connects=%d read_errors=%d\n",
		total, el.Seconds(), float64(total)/el.Seconds(), float64(bytes)/(1<<20)/el.Seconds(), c, secs[c-1], secs[0],
		hk.connects.Load(), hk.readErrs.Load())
	return nil
}

// consumeN polls cl until it has n records; it returns the records and
// value bytes it got.
func consumeN(ctx context.Context, cl *kgo.Client, n int) (int, int64, error) {
	got, bytes := 0, int64(0)
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, bytes, fmt.Errorf("%d of %d records within the time limit", got, n)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return got, bytes, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	return got, bytes, nil
}

// connHooks counts the clients' connections and failed answer reads.
type connHooks struct{ connects, readErrs atomic.Int64 }

func (h *connHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.connects.Add(1)
	}
}

func (h *connHooks) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.readErrs.Add(1)
	}
}

// roundTrips keeps each Produce request's round trip as franz-go's hook
// sees it (-e2e): the end of its write on the CLOCK_MONOTONIC clock (perf
// record -k CLOCK_MONOTONIC's), and the time from there to its answer read
// whole (ReadWait + TimeToRead), for the harness to set against the
// relaying process's trace (bench/cmd/harness/passage.go).
type roundTrips struct {
	mu    sync.Mutex
	lines []string
}

func (h *roundTrips) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 0 || e.Err() != nil { // Produce only
		return
	}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return
	}
	trip := e.ReadWait + e.TimeToRead
	line := fmt.Sprintf("%d %d", ts.Nano()-trip.Nanoseconds(), trip.Nanoseconds())
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
}

func (h *roundTrips) write(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return os.WriteFile(name, []byte(strings.Join(h.lines, "\n")+"\n"), 0o644)
}
