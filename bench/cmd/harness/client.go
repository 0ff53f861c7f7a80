package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// `harness client ...`: the franz-go clients of the quotas-reached part
// (reached.go), in a process of their own, each a client as a user makes
// one: the bootstrap, SASL PLAIN with its key and nothing else (the
// library's defaults: 1 MB batches, 10,000 buffered records, linger 0,
// snappy, its own timeouts), records of incompressible bytes. One producer
// and/or one consumer per key (-users, the keys in HARNESS_CLIENT_KEYS,
// comma-separated in the same order). Each prints, on stdout, a line per
// record acknowledged or read and per Produce or Fetch answer read
// (kgo.HookBrokerE2E):
//
//	P <unix ns> <bytes> <latency µs> <client>   a record acknowledged (latency from Produce)
//	C <unix ns> <bytes> <client>                a record read
//	Q <unix ns> <api key> <latency µs> <client>   a request's write to its answer read
//
// A producer produces -n records (0: until -seconds) flat out, or at -rate
// records/s; a consumer reads -n records from the start (0: until
// -seconds) as fast as they come, or hands them over at -consume-rate
// records/s. -seconds bounds every client; at the end what is still
// buffered is dropped, not waited for.
//
// The pacing (-rate, -consume-rate) is a fixed schedule from the client's
// first record: record i is produced, or handed over, no earlier than
// i/rate seconds after it; a client that fell behind catches up. A paced
// consumer takes at most 50 ms of its rate per PollRecords and waits for
// the schedule before the next; franz-go fetches again only once what it
// fetched is handed over, so at the broker it reads at the same rate on
// average, in its fetches' sizes (the library's defaults: up to 1 MiB a
// partition).
//
// -direct: no SASL, for the broker's PLAINTEXT listener (the floor of the
// noisy neighbour, reached.go); -users then only names the clients and
// HARNESS_CLIENT_KEYS is not read. The topic is the broker's (e.g.
// acme.quota, not the gateway's quota).

// clientOut serializes the lines of all the clients of the process.
type clientOut struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *clientOut) line(f string, a ...any) {
	o.mu.Lock()
	fmt.Fprintf(o.w, f, a...)
	o.mu.Unlock()
}

// e2eHook prints each Produce and Fetch request's latency.
type e2eHook struct {
	out *clientOut
	idx int
}

func (h e2eHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if e.Err() != nil || (key != 0 && key != 1) {
		return
	}
	h.out.line("Q %d %d %d %d\n", time.Now().UnixNano(), key, e.DurationE2E().Microseconds(), h.idx)
}

func clientMain(args []string) int {
	return clientRun(args, os.Stdout, os.Getenv("HARNESS_CLIENT_KEYS"))
}

// clientRun is harness client with its output and keys given.
func clientRun(args []string, stdout io.Writer, keysEnv string) int {
	fs := flag.NewFlagSet("harness client", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "bootstrap")
	topic := fs.String("topic", "quota", "topic")
	users := fs.String("users", "", "SASL PLAIN users (key ids), comma-separated; keys in HARNESS_CLIENT_KEYS")
	produce := fs.Bool("produce", false, "a producer per user")
	consume := fs.Bool("consume", false, "a consumer per user, from the start of the topic")
	n := fs.Int("n", 0, "records per client (0: until -seconds)")
	secs := fs.Float64("seconds", 60, "the longest a client runs")
	rate := fs.Float64("rate", 0, "a producer's records/s (0: flat out)")
	burst := fs.Int("burst", 1, "a paced producer's records sent at once (its rate kept on average): lumps, as a held client's")
	crate := fs.Float64("consume-rate", 0, "a consumer's records/s handed over (0: as they come)")
	direct := fs.Bool("direct", false, "no SASL (the broker's PLAINTEXT listener); -users only names the clients")
	size := fs.Int("size", 1024, "record size")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ids := strings.Split(*users, ",")
	keys := strings.Split(keysEnv, ",")
	switch {
	case *users == "":
		fmt.Fprintln(os.Stderr, "harness client: -users is empty")
		return 2
	case !*direct && len(keys) != len(ids):
		fmt.Fprintln(os.Stderr, "harness client: -users and HARNESS_CLIENT_KEYS must list as many")
		return 2
	case *rate < 0 || *crate < 0:
		fmt.Fprintln(os.Stderr, "harness client: -rate and -consume-rate must not be negative")
		return 2
	case *burst < 1:
		fmt.Fprintln(os.Stderr, "harness client: -burst must be 1 or more")
		return 2
	}
	out := &clientOut{w: bufio.NewWriterSize(stdout, 1<<20)}
	defer out.w.Flush()
	pool := make([]byte, 4<<20+*size)
	_, _ = rand.Read(pool)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*secs*float64(time.Second)))
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Int64
	run := func(fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil {
				fmt.Fprintln(os.Stderr, "harness client:", err)
				failed.Add(1)
			}
		}()
	}
	for i, id := range ids {
		opts := []kgo.Opt{kgo.SeedBrokers(*brokers), kgo.WithHooks(e2eHook{out, i})}
		if !*direct {
			opts = append(opts, kgo.SASL(plain.Auth{User: id, Pass: keys[i]}.AsMechanism()))
		}
		if *produce {
			run(func() error { return clientProduce(ctx, opts, out, i, *topic, pool, *size, *n, *rate, *burst) })
		}
		if *consume {
			run(func() error { return clientConsume(ctx, opts, out, i, *topic, *n, *crate) })
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		return 1
	}
	return 0
}

// pacer is a fixed schedule of rate events/s from t0: event i is due at
// t0 + i/rate (rate 0: none is waited for).
type pacer struct {
	t0   time.Time
	rate float64
}

func (p pacer) due(i int) time.Time {
	return p.t0.Add(time.Duration(float64(i) / p.rate * float64(time.Second)))
}

// wait waits until event i is due, or ctx is done.
func (p pacer) wait(ctx context.Context, i int) {
	if p.rate <= 0 {
		return
	}
	if d := time.Until(p.due(i)); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// pollBatch is the most records a paced consumer takes per poll: 50 ms of
// its rate (0: unpaced, PollFetches).
func pollBatch(rate float64) int {
	if rate <= 0 {
		return 0
	}
	return max(1, int(rate/20))
}

// clientProduce produces n records (0: until ctx ends), flat out or at
// rate records/s, burst records at a time (each lump due when its first
// record is).
func clientProduce(ctx context.Context, opts []kgo.Opt, out *clientOut, idx int, topic string, pool []byte, size, n int, rate float64, burst int) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close() // what is still buffered fails
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("producer %d: ping: %w", idx, err)
	}
	var fails atomic.Int64
	var first atomic.Value
	pace := pacer{time.Now(), rate}
	for i := 0; (n == 0 || i < n) && ctx.Err() == nil; i++ {
		pace.wait(ctx, i/burst*burst)
		off := (i * 4093) % (len(pool) - size)
		start := time.Now()
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+size]}, func(r *kgo.Record, err error) {
			now := time.Now()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, kgo.ErrClientClosed) {
					fails.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
				return
			}
			out.line("P %d %d %d %d\n", now.UnixNano(), len(r.Value), now.Sub(start).Microseconds(), idx)
		})
	}
	if n > 0 {
		if err := cl.Flush(ctx); err != nil {
			return fmt.Errorf("producer %d: flush: %w", idx, err)
		}
	}
	if f := fails.Load(); f > 0 {
		return fmt.Errorf("producer %d: %d records failed, first: %v", idx, f, first.Load())
	}
	return nil
}

func clientConsume(ctx context.Context, opts []kgo.Opt, out *clientOut, idx int, topic string, n int, rate float64) error {
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("consumer %d: ping: %w", idx, err)
	}
	got := 0
	batch := pollBatch(rate)
	var pace pacer // from the first record handed over
	for n == 0 || got < n {
		var fs kgo.Fetches
		if batch == 0 {
			fs = cl.PollFetches(ctx)
		} else {
			if got > 0 {
				pace.wait(ctx, got)
			}
			lim := batch
			if n > 0 {
				lim = min(lim, n-got)
			}
			fs = cl.PollRecords(ctx, lim)
		}
		if ctx.Err() != nil {
			if n > 0 {
				return fmt.Errorf("consumer %d: %d of %d records within the time limit", idx, got, n)
			}
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("consumer %d: fetch %s/%d: %w", idx, t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		now := time.Now()
		if batch > 0 && got == 0 && fs.NumRecords() > 0 {
			pace = pacer{now, rate}
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			out.line("C %d %d %d\n", now.UnixNano(), len(r.Value), idx)
		})
	}
	return nil
}
