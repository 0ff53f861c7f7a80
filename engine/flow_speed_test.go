package engine

// Issue 11.3: a loopback speed run of one large-fetch consumer, with "the
// broker is not read until the client reads" on and off, alternating.
// Run: FLEXWAY_FLOW_SPEED=1 go test ./engine -run TestFlowSpeed -v

import (
	"context"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/twmb/franz-go/pkg/kgo"
)

// handRun skips a run by hand (speed, memory, profiles) unless
// FLEXWAY_FLOW_SPEED is set.
func handRun(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("FLEXWAY_FLOW_SPEED") == "" {
		t.Skip(what + ": set FLEXWAY_FLOW_SPEED=1")
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestFlowSpeedLargeFetch(t *testing.T) {
	handRun(t, "a loopback speed run (96 MiB, a minute)")
	env := newTestEnv(t, "")
	const per, size = 192, 256 << 10 // 48 MiB on each of the two partitions
	const reads = 4
	produceDirect(t, env, 0, per, size)
	produceDirect(t, env, 1, per, size)
	rates := map[bool][]float64{}
	cpus := map[bool][]float64{}
	helds := map[bool][]int64{}
	for run := 0; run < 6; run++ {
		off := run%2 == 1
		setFlowOff(env, off)
		var peak atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // what the gateway holds for a connection, sampled
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				onLoops(t, env.e, func(l *session.Loop) {
					for cl := range l.Clients() {
						n := int64(cl.Conn().Queued())
						if b := cl.State().Broker; b != nil {
							n += int64(b.Buffered())
						}
						for {
							m := peak.Load()
							if n <= m || peak.CompareAndSwap(m, n) {
								break
							}
						}
					}
				})
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		start, cpu0 := time.Now(), cpuNow()
		p0, pn0 := env.e.env.Series.BrokerPauses.Load(), env.e.env.Series.BrokerPausedNs.Load()
		bytes := 0
		for k := 0; k < reads; k++ { // each run reads everything reads times
			cons := env.client("acme-app",
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0)}}),
				kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(10<<20))
			got := 0
			for got < 2*per {
				fs := cons.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("%d of %d records after 120 s", got, 2*per)
				}
				fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
				fs.EachRecord(func(r *kgo.Record) { got++; bytes += len(r.Value) })
			}
			cons.Close()
		}
		el, cpu := time.Since(start), cpuNow()-cpu0
		cancel()
		close(stop)
		wg.Wait()
		mib := float64(bytes) / (1 << 20)
		rates[off] = append(rates[off], mib/el.Seconds())
		cpus[off] = append(cpus[off], cpu.Seconds()/(mib/1024))
		helds[off] = append(helds[off], peak.Load())
		t.Logf("flow off=%v: %.0f MiB in %v: %.0f MiB/s, process CPU %.2f s/GiB, peak held by a connection %d KiB; %d broker pauses, %v paused",
			off, mib, el.Round(time.Millisecond), mib/el.Seconds(), cpu.Seconds()/(mib/1024), peak.Load()>>10, env.e.env.Series.BrokerPauses.Load()-p0, time.Duration(env.e.env.Series.BrokerPausedNs.Load()-pn0).Round(time.Millisecond))
	}
	setFlowOff(env, false)
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	for _, off := range []bool{false, true} {
		t.Logf("median, flow off=%v: %.0f MiB/s (runs %.0f), process CPU %.2f s/GiB, peak held %v bytes", off, med(append([]float64(nil), rates[off]...)), rates[off], med(cpus[off]), helds[off])
	}
}
