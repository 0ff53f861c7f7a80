// The frame of every broker fault test: a gateway in front of a
// faults.Cluster, the workload through it, the fault applied and healed,
// then the checks of issue 25: nothing acknowledged lost or doubled, the
// gateway's goroutines, file descriptors and heap back within a margin of
// their level before the fault, its log lines counted.
package faults

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The margins over the level before a fault that the gateway must return
// within once the fault is healed and its clients recovered.
const (
	marginGoroutines = 16
	marginFDs        = 8
	marginHeap       = 32 << 20
)

// gauges are the gateway's runtime figures: goroutines and heap from its
// /metrics, open file descriptors from /proc (its /metrics leaves out
// process_open_fds, a directory read per scrape that grows with the
// connections).
type gauges struct{ goroutines, fds, heap float64 }

func (gw *gateway) gauges() gauges {
	m := gw.metrics()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", gw.cmd.Process.Pid))
	if err != nil {
		gw.t.Fatal(err)
	}
	return gauges{
		goroutines: testkit.SumSeries(m, "go_goroutines "),
		fds:        float64(len(fds)),
		heap:       testkit.SumSeries(m, "go_memstats_heap_inuse_bytes "),
	}
}

func (g gauges) within(before gauges) bool {
	return g.goroutines <= before.goroutines+marginGoroutines && g.fds <= before.fds+marginFDs &&
		g.heap <= before.heap+marginHeap
}

// settles waits until the gateway's gauges are back within the margins of
// before.
func (gw *gateway) settles(before gauges) {
	gw.t.Helper()
	var now gauges
	deadline := time.Now().Add(30 * time.Second)
	for now = gw.gauges(); !now.within(before); now = gw.gauges() {
		if time.Now().After(deadline) {
			gw.t.Fatalf("30 s after the fault: %+v, before it %+v (margins %d goroutines, %d fds, %d heap bytes)",
				now, before, marginGoroutines, marginFDs, marginHeap)
		}
		time.Sleep(200 * time.Millisecond)
	}
	gw.t.Logf("gauges before the fault %+v, after %+v", before, now)
}

// Broker-side log lines of the seeds' causes (engine/signals' closeCauses).
var brokerLines = []string{
	"kafka connection closed: broker connection ended",
	"kafka connection closed: broker unreachable",
}

// faultEnv is a gateway on a three-broker cluster whose topic acme.orders
// has three partitions, partition 0 led by the group's coordinator: the
// node that faults hit, target. On a real broker, c is nil.
type faultEnv struct {
	t      *testing.T
	c      *Cluster
	gw     *gateway
	target int32

	brokers []string // the upstream's brokers, reached without the gateway
	topic   string   // the physical topic of acme's orders

	// javaFor, if set, has run start the Java client's idempotent producer
	// alongside franz-go's, writing for that long (javaAlongside).
	javaFor time.Duration
}

func newFaultEnv(t *testing.T, listener string) *faultEnv {
	t.Helper()
	return newFaultEnvWith(t, gwExtra{listener: listener})
}

// newFaultEnvWith is newFaultEnv with x in the gateway's configuration.
func newFaultEnvWith(t *testing.T, x gwExtra) *faultEnv {
	t.Helper()
	c := NewCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, "acme.orders"))
	target := c.CoordinatorFor("acme.~g.faults")
	if err := c.MoveTopicPartition("acme.orders", 0, target); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, writeConfig(t, c.ListenAddrs(), x))
	return &faultEnv{t: t, c: c, gw: gw, target: target, brokers: c.ListenAddrs(), topic: "acme.orders"}
}

// run starts the workload (a record of size bytes every period), lets it
// warm up, applies fault (which returns once the fault is over, healed),
// waits for the clients to write again, then checks what issue 25 asks;
// with env.javaFor, of the Java producer's records too. It returns the workload and the log lines of brokerLines the fault
// caused, by line.
func (env *faultEnv) run(period time.Duration, size int, fault func(w *workload)) map[string]int {
	t := env.t
	t.Helper()
	w := startWorkload(t, env.gw, period, size)
	j := env.startJavaAlongside()
	w.waitAcked(300, 30*time.Second)
	j.warm(w)
	gw := env.gw // a fault may start another gateway in its place
	before := gw.gauges()
	linesBefore := map[string]int{}
	for _, l := range brokerLines {
		linesBefore[l] = gw.lines(l)
	}
	start := time.Now()
	fault(w)
	t.Logf("fault over after %v", time.Since(start).Round(time.Millisecond))
	j.writing(w)
	w.waitAcked(300, time.Minute)
	t.Logf("clients writing again %v after the fault began", time.Since(start).Round(time.Millisecond))
	env.gw.settles(before)
	w.finish()
	j.finish(w)
	w.onBroker(env.brokers, env.topic)
	caused := map[string]int{}
	for _, l := range brokerLines {
		caused[l] = env.gw.lines(l)
		if env.gw == gw {
			caused[l] -= linesBefore[l]
		}
	}
	t.Logf("log lines the fault caused: %v", caused)
	if strings.Contains(env.gw.log.String(), "panic") {
		t.Fatal("the gateway's log holds a panic")
	}
	return caused
}
