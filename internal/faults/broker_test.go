// Issue 25.2 against kfake: each broker fault with real clients through
// the built gateway - a broker's connections reset mid-Produce and
// mid-Fetch, a broker blackholed then back, a broker slow and narrow.
package faults

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// resetWhile arms a reset of every connection to env.target at the moment
// a request of key reaches it (the broker handles the request, its answer
// goes to a connection that is gone), and waits until it happened.
func (env *faultEnv) resetWhile(key kmsg.Key) {
	t := env.t
	t.Helper()
	done := make(chan error, 1)
	env.c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		if env.c.CurrentNode() != env.target {
			return nil, nil, false // kept for the next request
		}
		env.c.DropControl()
		done <- env.c.Reset(env.target)
		return nil, nil, false // handled by the broker as usual
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s reached broker %d", key.Name(), env.target)
	}
}

// U2, U4: a broker's connections reset while it writes a Produce: the
// records are on the broker, their acknowledgement lost; the idempotent
// producer sends them again on a new connection and the broker keeps
// them once.
func TestBrokerResetMidProduce(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, "")
	caused := env.run(2*time.Millisecond, 100, func(*workload) { env.resetWhile(kmsg.Produce) })
	env.oncePerConnection(caused)
}

// A broker's connections reset while a Fetch waits there: the group's
// member fetches again and reads every record.
func TestBrokerResetMidFetch(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, "")
	caused := env.run(2*time.Millisecond, 100, func(*workload) { env.resetWhile(kmsg.Fetch) })
	env.oncePerConnection(caused)
}

// oncePerConnection: a reset writes its line once per client connection
// that used the broker, never once per request.
func (env *faultEnv) oncePerConnection(caused map[string]int) {
	env.t.Helper()
	if n := caused[brokerLines[0]]; n == 0 || n > 8 {
		env.t.Fatalf("%q written %d times for one reset", brokerLines[0], n)
	}
}

// The frame alone, no fault: the checks hold for a healthy path (what each
// fault test is measured against).
func TestWorkloadWithoutFault(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, "")
	env.run(2*time.Millisecond, 100, func(*workload) {})
}
