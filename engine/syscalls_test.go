package engine

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The system calls and wake-ups of the gateway's event loops per Produce
// round trip, with a producer shaped like the Java producer's defaults:
// 16 KiB batches of 1 KiB records, acks=all, idempotent (franz-go then
// keeps up to five requests in flight, as the Java producer does), a
// short linger, one partition (one Produce carries one batch). These
// counts do not depend on the machine's load the way CPU time does.
//
// Each loop is locked to its thread (lockLoops), so a loop's thread's
// counters in /proc are the loop's: syscr (read system calls), syscw
// (write system calls), voluntary context switches (the loop blocked:
// one wake-up each). With FLEXWAY_STRACE=1 the loops' threads are also
// traced (strace -c) and the summary is logged: every system call by name.
//
//	go test ./engine -run TestSyscallsPerProduceRoundTrip -count=1 -v
func TestSyscallsPerProduceRoundTrip(t *testing.T) {
	if os.Getenv(envKafkaSecurity) == "sasl_ssl" {
		// Towards a TLS broker crypto/tls writes each record (16 KiB of
		// plaintext at most) in its own call: a 16 KiB-batch Produce is two
		// writes there whatever the batching. Measured in clear text only.
		t.Skip("the broker reached over TLS: crypto/tls writes a record per call")
	}
	env := newTestEnv(t, "", withLockedLoops())
	counter := &produceCounter{}
	prod := env.client("acme-app",
		kgo.ProducerBatchMaxBytes(16<<10),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithHooks(counter),
	)
	value := make([]byte, 1<<10)
	_, _ = rand.Read(value)
	send := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var failed atomic.Pointer[error]
		for i := 0; i < n; i++ {
			prod.Produce(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if p := failed.Load(); p != nil {
			t.Fatalf("produce: %v", *p)
		}
	}
	send(2000) // warm up: connections, metadata, the producer id

	tids := loopThreads(t, env.e)
	var trace *straceRun
	if os.Getenv("FLEXWAY_STRACE") == "1" {
		trace = startStrace(t, tids)
	}
	before := threadCounters(t, tids)
	rt0 := counter.n.Load()
	records := 40_000 // 40 MiB: about 2,600 Produce round trips
	if n, err := strconv.Atoi(os.Getenv("FLEXWAY_SYSCALL_RECORDS")); err == nil && n > 0 {
		records = n // more, for a CPU profile of the loops (-cpuprofile)
	}
	send(records)
	after := threadCounters(t, tids)
	rts := counter.n.Load() - rt0
	if trace != nil {
		t.Logf("strace -c of the loops' threads:\n%s", trace.stop(t))
	}
	if rts < int64(records/16) {
		t.Fatalf("%d Produce round trips for %d records of 1 KiB in 16 KiB batches, want at least %d", rts, records, records/16)
	}
	d := after.sub(before)
	per := func(n int64) float64 { return float64(n) / float64(rts) }
	t.Logf("%d Produce round trips: per round trip %.2f reads, %.2f writes, %.2f read+write, %.2f wake-ups (voluntary switches), %.2f preemptions",
		rts, per(d.syscr), per(d.syscw), per(d.syscr+d.syscw), per(d.vol), per(d.invol))
	// Writes are coalesced per traffic event (coalesce.go): a read of the
	// client's socket is followed by at most one write to the broker, a
	// read of the broker's by at most one write to the client, however
	// many frames the read brought. Without it, every frame is a write:
	// 2 per round trip, whatever the reads. (The margin: the sweep's
	// resumes and the producer's other requests.)
	if d.syscw > d.syscr+d.syscr/20+10 {
		t.Errorf("%d writes for %d reads: the frames of one read are not written in one call", d.syscw, d.syscr)
	}
}

func withLockedLoops() Option { return func(o *Options) { o.lockLoops = true } }

type produceCounter struct{ n atomic.Int64 }

func (p *produceCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil {
		p.n.Add(1)
	}
}

// loopThreads returns the thread id of each event loop (locked to it).
func loopThreads(t *testing.T, e *Engine) []int {
	t.Helper()
	els := e.env.Loops()
	ch := make(chan int, len(els))
	for _, l := range els {
		if err := l.Run("test", func() { ch <- syscall.Gettid() }); err != nil {
			t.Fatal(err)
		}
	}
	var tids []int
	for range els {
		select {
		case tid := <-ch:
			tids = append(tids, tid)
		case <-time.After(10 * time.Second):
			t.Fatal("a loop did not run its task")
		}
	}
	return tids
}

type threadStats struct{ syscr, syscw, vol, invol int64 }

func (a threadStats) sub(b threadStats) threadStats {
	return threadStats{a.syscr - b.syscr, a.syscw - b.syscw, a.vol - b.vol, a.invol - b.invol}
}

// threadCounters sums the threads' counters from /proc/self/task.
func threadCounters(t *testing.T, tids []int) threadStats {
	t.Helper()
	var c threadStats
	for _, tid := range tids {
		dir := filepath.Join("/proc/self/task", strconv.Itoa(tid))
		for _, f := range []struct {
			file string
			keys map[string]*int64
		}{
			{"io", map[string]*int64{"syscr:": &c.syscr, "syscw:": &c.syscw}},
			{"status", map[string]*int64{"voluntary_ctxt_switches:": &c.vol, "nonvoluntary_ctxt_switches:": &c.invol}},
		} {
			fh, err := os.Open(filepath.Join(dir, f.file))
			if err != nil {
				t.Skipf("no per-thread counters: %v", err)
			}
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				fs := strings.Fields(sc.Text())
				if len(fs) == 2 {
					if p, ok := f.keys[fs[0]]; ok {
						v, _ := strconv.ParseInt(fs[1], 10, 64)
						*p += v
					}
				}
			}
			fh.Close()
		}
	}
	return c
}

type straceRun struct {
	cmd *exec.Cmd
	out string
}

func startStrace(t *testing.T, tids []int) *straceRun {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace.txt")
	args := []string{"-c", "-o", out}
	for _, tid := range tids {
		args = append(args, "-p", strconv.Itoa(tid))
	}
	cmd := exec.Command("strace", args...)
	if err := cmd.Start(); err != nil {
		t.Skipf("strace: %v", err)
	}
	// Attached once each thread names strace as its tracer (strace has no
	// ready signal of its own).
	tracer := strconv.Itoa(cmd.Process.Pid)
	waitUntil(t, 30*time.Second, "strace attached to the loops' threads", func() bool {
		for _, tid := range tids {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
			if !strings.Contains(string(b), "\nTracerPid:\t"+tracer+"\n") {
				return false
			}
		}
		return true
	})
	return &straceRun{cmd: cmd, out: out}
}

func (s *straceRun) stop(t *testing.T) string {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	b, err := os.ReadFile(s.out)
	if err != nil {
		return fmt.Sprint(err)
	}
	return string(b)
}
