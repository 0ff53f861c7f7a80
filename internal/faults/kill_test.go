// Issue 25.2: the gateway itself killed with kill -9 (the OOM killer, a
// host failure) mid-run, and a second gateway started on the same
// configuration, the clients (franz-go's and the Java client's) never
// restarted.
package faults

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// U2, U4: flexway killed with SIGKILL while two idempotent producers
// (franz-go's and the Java client's, kafka-clients' defaults) and a group
// write and read through it; a second flexway on the same files takes over
// its ports. Whatever the first had forwarded and not answered each
// producer sends again: every record acknowledged is on the broker once,
// in order per producer and partition, and read by the group. (The Java
// producer alongside rather than in a test of its own: one cluster, one
// gateway pair and one kill serve both, the test's wall time that of the
// Java producer's run.)
func TestGatewayKilledAndRestarted(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, "")
	env.javaFor = 12 * time.Second
	caused := env.run(2*time.Millisecond, 100, func(w *workload) {
		cfg := env.gw.cfg
		// Killed while a Produce it forwarded waits at the broker: the
		// broker writes it, its answer finds no one.
		// The function is dropped only once its sleep ends, and a sleeping
		// control lets other connections run: a second producer's Produce
		// can enter it meanwhile, and passes.
		held, killed := make(chan struct{}), make(chan struct{})
		var first sync.Once
		env.c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
			sleep := false
			first.Do(func() { sleep = true })
			if !sleep {
				return nil, nil, false
			}
			env.c.DropControl()
			close(held)
			env.c.SleepControl(func() { <-killed })
			return nil, nil, false
		})
		select {
		case <-held:
		case <-time.After(30 * time.Second):
			t.Fatal("no Produce reached the broker")
		}
		env.gw.kill()
		close(killed)
		if code := env.gw.cmd.ProcessState.ExitCode(); code != -1 {
			t.Fatalf("exit status %d: want killed by a signal", code)
		}
		acked := w.ackedCount()
		env.gw = startGateway(t, cfg)
		t.Logf("second gateway up, %d records acknowledged meanwhile", w.ackedCount()-acked)
	})
	if n := caused[brokerLines[0]] + caused[brokerLines[1]]; n != 0 {
		t.Fatalf("the second gateway logged %d broker failures: its brokers never failed", n)
	}
}
