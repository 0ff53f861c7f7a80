// Command gwprof is the gateway built for profiling, for the benchmark
// harness only: the same engine as cmd/flexway, booted from the same
// flexway.yaml, plus two endpoints on -prof that start and stop a Go CPU
// profile (runtime/pprof). The gateway itself has no pprof endpoint; this
// main adds one without touching it. bench/run uses it for the profile of
// the gateway under the producer and consumer perf tests:
//
//	gwprof -config flexway.yaml -prof 127.0.0.1:29465
//	curl -X POST 'http://127.0.0.1:29465/start?file=/tmp/cpu.pprof'
//	... load ...
//	curl -X POST http://127.0.0.1:29465/stop
//	go tool pprof -top gwprof /tmp/cpu.pprof
//	curl -X POST 'http://127.0.0.1:29465/heap?file=/tmp/heap.pprof'   # the heap in use now
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine"
)

func main() {
	path := flag.String("config", "flexway.yaml", "the configuration file")
	prof := flag.String("prof", "127.0.0.1:29465", "address of the profile control endpoint")
	hz := flag.Int("hz", 1000, "CPU profile sampling rate (Go's default is 100)")
	memRate := flag.Int("memrate", 0, "heap profile: one sample per this many bytes allocated (0: Go's 512 KiB; 1: every allocation)")
	// The engine's thresholds, to compare them on one held set-up
	// (BENCHMARKS.md, 34bf691); -1 keeps the engine's default.
	readBuf := flag.Int("read-buffer", -1, "gnet's read of a socket in bytes (default 16 KiB)")
	readOn := flag.Int("read-on", -1, "the loops' read-on buffer in bytes (default 256 KiB; 0: no reading on)")
	streamMin := flag.Int("stream-min", -1, "a frame above this many bytes, not whole in the buffer, is relayed as it arrives (default 64 KiB)")
	fetchSplice := flag.Int("fetch-splice-min", -1, "a partition's Fetch records spliced from this many bytes (default 64 KiB; 0: off)")
	produceSplice := flag.Int("produce-splice-min", -1, "a partition's Produce records spliced from this many bytes (default 64 KiB; 0: off)")
	flag.Parse()
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}
	snap, err := configs.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	opts := []engine.Option{engine.WithLogger(log)}
	if n := *readBuf; n >= 0 {
		opts = append(opts, engine.WithReadBufferCap(n))
	}
	if n := *readOn; n >= 0 {
		opts = append(opts, engine.WithReadOnCap(n))
	}
	if n := *streamMin; n >= 0 {
		opts = append(opts, func(o *engine.Options) { o.StreamMin = n })
	}
	if n := *fetchSplice; n >= 0 {
		opts = append(opts, func(o *engine.Options) { o.FetchSpliceMin = n })
	}
	if n := *produceSplice; n >= 0 {
		opts = append(opts, func(o *engine.Options) { o.ProduceSpliceMin = n })
	}
	e, err := engine.New(ctx, snap, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		os.Exit(1)
	}
	errc := make(chan error, 1)
	go func() { errc <- e.Serve() }()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	err = e.Ready(rctx)
	rcancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		os.Exit(1)
	}

	var (
		mu  sync.Mutex
		out *os.File
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if out != nil {
			http.Error(w, "a profile is running", http.StatusConflict)
			return
		}
		f, err := os.Create(r.URL.Query().Get("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// Set the rate first: StartCPUProfile then keeps it (and says on
		// stderr that it cannot set its own 100 Hz).
		runtime.SetCPUProfileRate(*hz)
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out = f
		_, _ = io.WriteString(w, "started\n")
	})
	mux.HandleFunc("/stop", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if out == nil {
			http.Error(w, "no profile running", http.StatusConflict)
			return
		}
		pprof.StopCPUProfile()
		out.Close()
		out = nil
		_, _ = io.WriteString(w, "stopped\n")
	})
	mux.HandleFunc("/heap", func(w http.ResponseWriter, r *http.Request) {
		// What the heap holds now (after a collection): what idle
		// connections cost, by the code that made it (issue 23.5).
		f, err := os.Create(r.URL.Query().Get("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer f.Close()
		runtime.GC()
		runtime.GC() // twice: what sync.Pools held is gone too
		if err := pprof.WriteHeapProfile(f); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "written\n")
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		e.Metrics().WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	})
	srv := &http.Server{Addr: *prof, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Error("gwprof endpoint stopped", "error", err.Error())
		}
	}()
	log.Info("flexway started (gwprof)", "listeners", len(e.Addrs()), "prof", *prof)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil {
			fmt.Fprintln(os.Stderr, "gwprof:", err)
		}
	}
	mu.Lock()
	if out != nil {
		pprof.StopCPUProfile()
		out.Close()
	}
	mu.Unlock()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	_ = e.Stop(sctx)
	_ = srv.Close()
}
