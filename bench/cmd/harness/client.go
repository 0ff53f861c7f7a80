package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
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
// -seconds). -seconds bounds every client; at the end what is still
// buffered is dropped, not waited for.

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
	fs := flag.NewFlagSet("harness client", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "bootstrap")
	topic := fs.String("topic", "quota", "topic")
	users := fs.String("users", "", "SASL PLAIN users (key ids), comma-separated; keys in HARNESS_CLIENT_KEYS")
	produce := fs.Bool("produce", false, "a producer per user")
	consume := fs.Bool("consume", false, "a consumer per user, from the start of the topic")
	n := fs.Int("n", 0, "records per client (0: until -seconds)")
	secs := fs.Float64("seconds", 60, "the longest a client runs")
	rate := fs.Int("rate", 0, "a producer's records/s (0: flat out)")
	size := fs.Int("size", 1024, "record size")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ids := strings.Split(*users, ",")
	keys := strings.Split(os.Getenv("HARNESS_CLIENT_KEYS"), ",")
	if *users == "" || len(keys) != len(ids) {
		fmt.Fprintln(os.Stderr, "harness client: -users and HARNESS_CLIENT_KEYS must list as many")
		return 2
	}
	out := &clientOut{w: bufio.NewWriterSize(os.Stdout, 1<<20)}
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
		opts := []kgo.Opt{kgo.SeedBrokers(*brokers), kgo.SASL(plain.Auth{User: id, Pass: keys[i]}.AsMechanism()),
			kgo.WithHooks(e2eHook{out, i})}
		if *produce {
			run(func() error { return clientProduce(ctx, opts, out, i, *topic, pool, *size, *n, *rate) })
		}
		if *consume {
			run(func() error { return clientConsume(ctx, opts, out, i, *topic, *n) })
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		return 1
	}
	return 0
}

func clientProduce(ctx context.Context, opts []kgo.Opt, out *clientOut, idx int, topic string, pool []byte, size, n, rate int) error {
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
	t0 := time.Now()
	for i := 0; (n == 0 || i < n) && ctx.Err() == nil; i++ {
		if rate > 0 {
			if d := time.Until(t0.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
		}
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

func clientConsume(ctx context.Context, opts []kgo.Opt, out *clientOut, idx int, topic string, n int) error {
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("consumer %d: ping: %w", idx, err)
	}
	got := 0
	for n == 0 || got < n {
		fs := cl.PollFetches(ctx)
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
		now := time.Now().UnixNano()
		fs.EachRecord(func(r *kgo.Record) {
			got++
			out.line("C %d %d %d\n", now, len(r.Value), idx)
		})
	}
	return nil
}
