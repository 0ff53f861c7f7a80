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
func (env *faultEnv) resetWhile(key kmsg.Key) { env.waitReset(key, env.armReset(key, 1)) }

// armReset arms the reset of resetWhile at the nth request of key that
// reaches env.target, or at the first one a second or more after the first
// one there, whichever comes first (a client slowed by a loaded machine
// puts more records in each request, so that a count alone may never be
// reached); the reset's outcome comes on the channel.
func (env *faultEnv) armReset(key kmsg.Key, nth int) <-chan error {
	done := make(chan error, 1)
	seen := 0
	var first time.Time
	env.c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		if env.c.CurrentNode() != env.target {
			return nil, nil, false // kept for the next request
		}
		if seen++; seen == 1 {
			first = time.Now()
		}
		if seen < nth && time.Since(first) < time.Second {
			return nil, nil, false
		}
		env.c.DropControl()
		done <- env.c.Reset(env.target)
		return nil, nil, false // handled by the broker as usual
	})
	return done
}

// waitReset waits for the reset armed on done.
func (env *faultEnv) waitReset(key kmsg.Key, done <-chan error) {
	t := env.t
	t.Helper()
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

// blackholeFor is how long a broker stays blackholed: past every
// franz-go request timeout (a Produce's 10 s + 10 s, a Fetch's 5 s + 10 s),
// as the 30 s.
const blackholeFor = 30 * time.Second

// A broker (the group's coordinator, a partition's leader) whose host
// stops answering for 30 s, then answers again: the clients time their
// requests out, close their connections, reconnect, and write and read
// everything once it is back.
func TestBrokerBlackholedThenBack(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, "")
	env.run(2*time.Millisecond, 100, func(w *workload) {
		acked := w.ackedCount()
		env.blackholeThenBack()
		t.Logf("%d records acknowledged while the broker was blackholed", w.ackedCount()-acked)
	})
}

// blackholeThenBack blackholes env.target for blackholeFor, then heals it.
func (env *faultEnv) blackholeThenBack() {
	if err := env.c.Blackhole(env.target); err != nil {
		env.t.Fatal(err)
	}
	time.Sleep(blackholeFor) // the fault's length, not a wait for a condition
	env.c.Heal(env.target)
}

// The slow and narrow broker's figures, and the gateway's budgets in the
// test (B2): 4 MiB per connection, 16 MiB for the replica.
const (
	slowFor       = time.Minute
	slowLatency   = 200 * time.Millisecond
	slowKiBPerSec = 1024
	slowBudgets   = "    max_in_flight_bytes: 4MiB\n    max_total_in_flight_bytes: 16MiB\n"
	slowTotal     = 16 << 20
)

// B2: a broker at 200 ms latency and 1 MiB/s for a minute under a
// producer that writes more than that (4 KiB records, 2 MiB/s) and a
// group that reads it all: the gateway's heap stays within its in-flight
// budget of the level before, and everything crosses once it is fast again.
func TestBrokerSlowAndNarrow(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, slowBudgets)
	env.run(2*time.Millisecond, 4096, func(*workload) { env.slowAndNarrow(slowFor) })
}

// slowAndNarrow slows env.target down to slowLatency and slowKiBPerSec for
// d, the gateway's heap in use checked meanwhile against its level
// before and the in-flight budget of slowBudgets, then heals it.
func (env *faultEnv) slowAndNarrow(d time.Duration) {
	t := env.t
	t.Helper()
	var peak float64
	base := env.gw.gauges().heap
	if err := env.c.Latency(env.target, slowLatency); err != nil {
		t.Fatal(err)
	}
	if err := env.c.Bandwidth(env.target, slowKiBPerSec); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		peak = max(peak, env.gw.gauges().heap)
		if peak > base+slowTotal+marginHeap {
			t.Fatalf("heap in use %.0f MiB while the broker is slow: over %.0f MiB before + the 16 MiB budget + margin",
				peak/(1<<20), base/(1<<20))
		}
	}
	env.c.Heal(env.target)
	t.Logf("heap in use: %.1f MiB before, %.1f MiB at most while slow", base/(1<<20), peak/(1<<20))
}

// downFor is how long a broker stays stopped, refusing connections.
const downFor = 10 * time.Second

// A broker stopped (its connections closed, new ones refused) for 10 s,
// then started again: the clients reconnect on their own and everything
// crosses. The gateway says the broker is unreachable once for the outage
// (at most once more for the bootstrap route that dialled it), not once per
// client reconnection: franz-go retries every second or so, a thousand
// clients would write thousands of lines; every failed dial is still
// counted in flexway_kafka_upstream_connections_total{outcome="failed"}.
func TestBrokerDownThenUp(t *testing.T) {
	t.Parallel()
	env := newFaultEnv(t, "")
	caused := env.run(2*time.Millisecond, 100, func(*workload) { env.downThenUp() })
	env.oncePerOutage(caused)
}

// downThenUp stops env.target for downFor, then starts it again.
func (env *faultEnv) downThenUp() {
	env.c.Down(env.target)
	time.Sleep(downFor) // the fault's length, not a wait for a condition
	if err := env.c.Up(env.target); err != nil {
		env.t.Fatal(err)
	}
}

// oncePerOutage: a broker down then up writes its connections' ends once
// per connection, and "broker unreachable" once for the outage (at most
// once more for the bootstrap route that dialled it).
func (env *faultEnv) oncePerOutage(caused map[string]int) {
	env.t.Helper()
	env.oncePerConnection(caused)
	if n := caused[brokerLines[1]]; n == 0 || n > 2 {
		env.t.Fatalf("%q written %d times for one outage of one broker", brokerLines[1], n)
	}
}
