// Issue 25.2 with the Java client through the other broker faults: its
// idempotent producer (acks=all, kafka-clients' defaults) writing while a
// broker is blackholed then back, stopped then started, slow and narrow;
// what it was told acknowledged checked as the franz-go workload's is, read
// by a franz-go group.
package faults

import (
	"strings"
	"testing"
	"time"
)

// javaAfter is how long the Java producer keeps writing past the fault's
// end at the latest (its start, the warm-up and the fault come before):
// records sent after the heal, the producer's recovery shown by records
// written, not only by a backlog flushed.
const javaAfter = 10 * time.Second

// runJava is run with the Java producer in place of franz-go's: the
// group of the workload; the Java client writing records of size bytes,
// pause apart, for faultFor+javaAfter; fault (of length faultFor, healed
// when it returns) applied once the group has read 300 of them; then the
// checks of run, and the gateway's gauges back at their idle level once
// the clients are gone. It returns the log lines of brokerLines the fault
// caused, by line.
func (env *faultEnv) runJava(size int, pause, faultFor time.Duration, fault func()) map[string]int {
	t := env.t
	t.Helper()
	idle := env.gw.gauges()
	w := startWorkload(t, env.gw, 0, 0)
	n := int((faultFor + javaAfter) / pause)
	j := startJavaProducer(t, env.gw, n, size, pause)
	w.waitRead(300, time.Minute) // the JVM started, the path warm
	linesBefore := map[string]int{}
	for _, l := range brokerLines {
		linesBefore[l] = env.gw.lines(l)
	}
	start := time.Now()
	fault()
	t.Logf("fault over after %v", time.Since(start).Round(time.Millisecond))
	if !j.running() {
		t.Fatalf("the Java producer (%d records) ended before the fault was over", n)
	}
	w.waitRead(300, time.Minute)
	t.Logf("the group reading again %v after the fault began", time.Since(start).Round(time.Millisecond))
	acked := j.wait()
	t.Logf("the Java producer done %v after the fault began", time.Since(start).Round(time.Millisecond))
	byPartition := map[int32]int{}
	for _, p := range acked {
		byPartition[p]++
	}
	if t.Logf("records acknowledged by partition: %v", byPartition); byPartition[0] == 0 {
		t.Fatal("no record on partition 0, the one of the broker at fault")
	}
	w.mu.Lock()
	w.sent, w.acked = n, acked
	w.mu.Unlock()
	w.finish()
	w.onBroker(env.brokers, env.topic)
	caused := map[string]int{}
	for _, l := range brokerLines {
		caused[l] = env.gw.lines(l) - linesBefore[l]
	}
	t.Logf("log lines the fault caused: %v", caused)
	w.stopCons()
	w.cons.Close()
	w.prod.Close()
	env.gw.settles(idle)
	if strings.Contains(env.gw.log.String(), "panic") {
		t.Fatal("the gateway's log holds a panic")
	}
	return caused
}

// U2, U4: the broker of partition 0 and the group's coordinator blackholed
// for 30 s (the Java producer's request timeout, 30 s, passes meanwhile),
// then back: the Java producer's requests time out or wait, it reconnects
// and sends again within its delivery timeout (120 s), and every record
// it was told acknowledged is on the broker once, in order, read by the
// group.
func TestJavaProducerBrokerBlackholedThenBack(t *testing.T) {
	t.Parallel()
	needJava(t)
	env := newFaultEnv(t, "")
	env.runJava(100, 5*time.Millisecond, blackholeFor, env.blackholeThenBack)
}

// U2, U4: the broker stopped for 10 s, then started again: the Java
// producer reconnects on its own and loses or doubles nothing; the gateway
// writes the broker's lines once per connection and once per outage, as
// with franz-go.
func TestJavaProducerBrokerDownThenUp(t *testing.T) {
	t.Parallel()
	needJava(t)
	env := newFaultEnv(t, "")
	env.oncePerOutage(env.runJava(100, 5*time.Millisecond, downFor, env.downThenUp))
}

// javaSlowFor is how long the broker stays slow and narrow under the Java
// producer: half of TestBrokerSlowAndNarrow's minute (the franz-go test
// keeps the full length), enough for the producer's requests to
// that broker to take 400 ms and more for hundreds of them, and the
// package's wall time in check (its tests run two at a time on two cores).
const javaSlowFor = slowFor / 2

// B2, U2: the broker at 200 ms latency and 1 MiB/s for 30 s while the
// Java producer writes 4 KiB records at 2 MiB/s, a quarter of them to the
// slow broker's partition (one of its four keys): each of its requests
// there takes 400 ms and more, it writes every record within its delivery
// timeout; the gateway's heap stays within its in-flight budget of the
// level before, and every record crosses once. (The Java producer keeps
// 5 requests in flight per connection at most, each with a batch of 16 KiB
// at most per partition: what it holds in the gateway is small.)
func TestJavaProducerBrokerSlowAndNarrow(t *testing.T) {
	t.Parallel()
	needJava(t)
	env := newFaultEnvWith(t, gwExtra{listener: slowBudgets})
	env.runJava(4096, 2*time.Millisecond, javaSlowFor, func() { env.slowAndNarrow(javaSlowFor) })
}
