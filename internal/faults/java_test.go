// Issue 25.2 with the Java client (org.apache.kafka:kafka-clients, the
// program of interop/java built by scripts/build-java-client.sh): its
// idempotent producer through a broker fault, the records it was told
// acknowledged checked as the franz-go workload's are.
package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var javaBuild struct {
	once sync.Once
	cp   string
	err  error
}

// needJava returns the Java client's classpath, built once per test
// process (cached across processes by the script). Without a JDK or Maven
// it skips, or under CI fails.
func needJava(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing (a JDK 17+ and Maven: scripts/install-deps.sh): %v", bin, err)
			}
			t.Skipf("%s missing; the Java client needs a JDK 17+ and Maven (scripts/install-deps.sh)", bin)
		}
	}
	javaBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var o, e bytes.Buffer
		cmd := exec.CommandContext(ctx, filepath.Join("..", "..", "scripts", "build-java-client.sh"), "--print-classpath")
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			javaBuild.err = fmt.Errorf("scripts/build-java-client.sh: %v\n%s", err, e.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(o.String()), "\n")
		javaBuild.cp = lines[len(lines)-1]
	})
	if javaBuild.err != nil {
		t.Fatal(javaBuild.err)
	}
	return javaBuild.cp
}

// javaProducer is a run of the Java client's produce command.
type javaProducer struct {
	t        *testing.T
	n        int
	out, err lockedBuf
	done     chan struct{} // closed when the process has exited
	runErr   error
}

// startJavaProducer starts the Java client's produce command through gw as
// the quickstart's producer key: n records "j-<i>" (padded to size bytes
// with '.' before "-<i>"), pause apart, the producer idempotent with
// acks=all and every timeout, backoff and linger at kafka-clients'
// defaults (--library-defaults: a request times out after 30 s, a record
// after 120 s). It is killed at the test's end if still running.
func startJavaProducer(t *testing.T, gw *gateway, n, size int, pause time.Duration) *javaProducer {
	t.Helper()
	cp := needJava(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	const id = "acme-orders-producer"
	cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true", "-cp", cp, "dev.flexway.interop.Main", "produce",
		"--bootstrap", gw.bootstrap(), "--user", id, "--password", quickstartKey(t, id),
		"--count", strconv.Itoa(n), "--prefix", "j", "--pause-ms", strconv.FormatInt(pause.Milliseconds(), 10),
		"--value-bytes", strconv.Itoa(size), "--library-defaults", "true", "--timeout-ms", "240000")
	j := &javaProducer{t: t, n: n, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &j.out, &j.err
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		j.runErr = cmd.Wait()
		close(j.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-j.done
	})
	return j
}

// running says whether the producer is still at work.
func (j *javaProducer) running() bool {
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// wait waits for the producer's end: every record must have been
// acknowledged. It returns the partition each record was acknowledged on,
// by i.
func (j *javaProducer) wait() map[int]int32 {
	t := j.t
	t.Helper()
	<-j.done
	out, errs := j.out.String(), j.err.String()
	if j.runErr != nil {
		t.Fatalf("java produce: %v\nstdout:\n%s\nstderr:\n%s", j.runErr, tail(out, 2000), tail(errs, 6000))
	}
	acked := map[int]int32{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l) // "sent PARTITION OFFSET KEY VALUE"
		if len(f) != 5 || f[0] != "sent" {
			continue
		}
		p, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("java produce: %q", l)
		}
		acked[valueN([]byte(f[4]))] = int32(p)
	}
	t.Logf("java produce: %d lines of its clients' warnings, the last:\n%s", strings.Count(errs, " WARN "), tail(errs, 1500))
	if len(acked) != j.n || !strings.Contains(out, fmt.Sprintf("produced %d\n", j.n)) {
		t.Fatalf("java produce: %d of %d records acknowledged\nstderr:\n%s", len(acked), j.n, tail(errs, 6000))
	}
	return acked
}

// U2, U4: the broker of partition 0 resets every connection while it
// writes a Produce of the Java producer (its 40th there, or its first a
// second after the first there), the answer lost: the producer sends the
// batch again on a new connection and the broker keeps it once. Every record the Java client was told
// acknowledged is on the broker once, in order, and read by a group; once
// the clients are gone, the gateway's gauges are back at their idle level.
func TestJavaProducerBrokerResetMidProduce(t *testing.T) {
	t.Parallel()
	needJava(t)
	env := newFaultEnv(t, "")
	idle := env.gw.gauges()
	w := startWorkload(t, env.gw, 0, 0) // the group; the records are the Java producer's
	const n = 1000
	reset := env.armReset(kmsg.Produce, 40)
	acked := startJavaProducer(t, env.gw, n, 0, 5*time.Millisecond).wait()
	env.waitReset(kmsg.Produce, reset)
	w.mu.Lock()
	w.sent, w.acked = n, acked
	w.mu.Unlock()
	w.finish()
	w.onBroker(env.brokers, env.topic)
	env.oncePerConnection(map[string]int{brokerLines[0]: env.gw.lines(brokerLines[0])})
	// Every client gone (the Java producer has exited): the gateway is back
	// within the margins of its idle level.
	w.stopCons()
	w.cons.Close()
	w.prod.Close()
	env.gw.settles(idle)
}

// javaPause is the pause between the records of a Java producer run
// alongside franz-go's (faultEnv.javaFor).
const javaPause = 5 * time.Millisecond

// javaAlongside is the Java producer run alongside the workload's
// franz-go producer; its records are told apart by valueN (javaBase).
type javaAlongside struct {
	j *javaProducer
	n int
}

// startJavaAlongside starts the Java producer for env.javaFor, pauses
// apart, records of its own size; nil without javaFor, or without a JDK
// outside CI (the franz-go half of the test still runs).
func (env *faultEnv) startJavaAlongside() *javaAlongside {
	t := env.t
	t.Helper()
	if env.javaFor == 0 {
		return nil
	}
	for _, bin := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(bin); err != nil && os.Getenv("CI") == "" {
			t.Logf("%s missing: the Java producer left out, franz-go's alone", bin)
			return nil
		}
	}
	n := int(env.javaFor / javaPause)
	return &javaAlongside{j: startJavaProducer(t, env.gw, n, 0, javaPause), n: n}
}

// warm waits until the group has read 300 of the Java producer's records:
// its JVM started, its path through the gateway warm.
func (a *javaAlongside) warm(w *workload) {
	if a == nil {
		return
	}
	w.t.Helper()
	waitFor(w.t, time.Minute, "300 records of the Java producer read by the group", func() bool { return w.readJavaCount() >= 300 })
}

// writing checks, once the fault is over, that the Java producer is still
// at work (it was not restarted), and waits until the group has read 300
// more of its records: it writes again.
func (a *javaAlongside) writing(w *workload) {
	if a == nil {
		return
	}
	t := w.t
	t.Helper()
	if !a.j.running() {
		t.Fatalf("the Java producer (%d records, %v) ended before the fault was over", a.n, javaPause)
	}
	want := w.readJavaCount() + 300
	waitFor(t, time.Minute, fmt.Sprintf("%d records of the Java producer read by the group", want), func() bool { return w.readJavaCount() >= want })
}

// finish waits for the Java producer's end (every record acknowledged),
// adds what it was told acknowledged to the workload's records, and waits
// until the group has read them all.
func (a *javaAlongside) finish(w *workload) {
	if a == nil {
		return
	}
	t := w.t
	t.Helper()
	acked := a.j.wait()
	w.mu.Lock()
	w.sent += a.n
	for n, p := range acked {
		w.acked[n] = p
	}
	w.mu.Unlock()
	waitFor(t, time.Minute, "the group read every record the Java producer was told acknowledged", func() bool { return len(w.unread()) == 0 })
	t.Logf("the Java producer's %d records acknowledged; checked with franz-go's, each producer's order on its own", len(acked))
}
