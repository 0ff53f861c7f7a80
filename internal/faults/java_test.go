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

// javaProduce runs the Java client's produce command through gw as the
// quickstart's producer key: n records "j-<i>", pause apart, the producer's
// settings those of interop/java (idempotent, acks=all). It returns the
// partition each record was acknowledged on, by i.
func javaProduce(t *testing.T, gw *gateway, n int, pause time.Duration) map[int]int32 {
	t.Helper()
	cp := needJava(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const id = "acme-orders-producer"
	cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true", "-cp", cp, "dev.flexway.interop.Main", "produce",
		"--bootstrap", gw.bootstrap(), "--user", id, "--password", quickstartKey(t, id),
		"--count", strconv.Itoa(n), "--prefix", "j", "--pause-ms", strconv.FormatInt(pause.Milliseconds(), 10),
		"--timeout-ms", "120000")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("java produce: %v\nstdout:\n%s\nstderr:\n%s", err, tail(o.String(), 2000), tail(e.String(), 6000))
	}
	acked := map[int]int32{}
	for _, l := range strings.Split(o.String(), "\n") {
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
	t.Logf("java produce: %d lines of its clients' warnings, the last:\n%s", strings.Count(e.String(), " WARN "), tail(e.String(), 1500))
	if len(acked) != n || !strings.Contains(o.String(), fmt.Sprintf("produced %d\n", n)) {
		t.Fatalf("java produce: %d of %d records acknowledged\nstderr:\n%s", len(acked), n, tail(e.String(), 6000))
	}
	return acked
}

// U2, U4: the broker of partition 0 resets every connection while it
// writes a Produce of the Java producer (its 40th there), the answer
// lost: the producer sends the batch again on a new connection and the
// broker keeps it once. Every record the Java client was told
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
	acked := javaProduce(t, env.gw, n, 5*time.Millisecond)
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
