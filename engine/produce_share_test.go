package engine

// Issue 11.4: where a franz-go producer's record bytes go (a hand run,
// like flow_speed_test.go): how many are spliced on the loop, how many
// pass through the loop's buffer, and how often the producer is held for
// its broker. Against kfake by default; FLEXWAY_TEST_UPSTREAM=kafka for
// the real broker.
// Run: FLEXWAY_FLOW_SPEED=1 go test ./engine -run TestProduceSpliceShare -v

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceSpliceShare(t *testing.T) {
	handRun(t, "a loopback profile run")
	mib := 1024
	if v, err := strconv.Atoi(os.Getenv("FLEXWAY_PRODUCE_MIB")); err == nil && v > 0 {
		mib = v
	}
	env := newTestEnv(t, "")
	bigBatches(t, env)
	prod := env.client("acme-app",
		kgo.DefaultProduceTopic("orders"),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1<<16),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	defer prod.Close()
	val := make([]byte, 1024)
	n := mib << 10
	spliced, nexts, units, outs := env.e.env.Series.ProduceSpliced.Load(), env.e.env.Series.ProduceNexts.Load(), env.e.env.Series.ProduceUnits.Load(), env.e.env.Series.ProducePipeOuts.Load()
	pauses := env.e.env.Series.ClientPauses.Load()
	cpu0, t0 := cpuNow(), time.Now()
	done := make(chan error, 1)
	for i := 0; i < n; i++ {
		prod.Produce(context.Background(), &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case done <- err:
				default:
				}
			}
		})
	}
	if err := prod.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatal(err)
	default:
	}
	el, cpu := time.Since(t0), cpuNow()-cpu0
	total := float64(int64(n) * 1024)
	t.Logf("%d MiB in %v (%.0f MiB/s), process CPU %.2f s/GiB (gateway and client)", mib, el.Round(time.Millisecond), float64(mib)/el.Seconds(), cpu.Seconds()/(float64(mib)/1024))
	t.Logf("spliced %.1f %% of the record bytes; requests begun from the socket %d, units taken from it %d, pipe read out %d; producer holds %d",
		100*float64(env.e.env.Series.ProduceSpliced.Load()-spliced)/total, env.e.env.Series.ProduceNexts.Load()-nexts, env.e.env.Series.ProduceUnits.Load()-units, env.e.env.Series.ProducePipeOuts.Load()-outs,
		env.e.env.Series.ClientPauses.Load()-pauses)
}
