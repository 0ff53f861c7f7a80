package engine

// B2's replica budget (max_total_in_flight_bytes) reached by several
// tenants at once, each under its own share: the connections wait for it
// in either on_tenant_budget_exceeded mode, the bytes held stay within it
// (plus one answer alone per connection), the gateway's heap with them,
// and every client gets every answer once it reads.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/session"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The shape of the test: rbTenants tenants of rbConns connections each, every
// connection asking rbFetches Fetch answers of at most rbCap bytes (half of
// max_response_bytes) and reading none at first. A tenant's connections
// hold at most 3 x 4 MiB (max_in_flight_bytes), under its 16 MiB share;
// together they would hold 48 MiB: the replica's 16 MiB is the bound met.
const (
	rbTenants = 4
	rbConns   = 3
	rbFetches = 400
	rbRecord  = 8 << 10  // a record's value
	rbRecords = 64       // records of each tenant's orders
	rbTotal   = 16 << 20 // max_total_in_flight_bytes
	rbShare   = 16 << 20 // max_tenant_in_flight_bytes
	rbCap     = 32 << 10 // a Fetch's grant: max_response_bytes/2
	// rbAnswer bounds one answer's bytes in the budget: its grant, one
	// batch past it (KIP-74: a broker answers at least one batch whole;
	// batches hold 16 KiB here) and the gateway's reserve per partition.
	rbAnswer = rbCap + 16<<10 + 2*128
	rbLoops  = 2 // the env's event loops (testEnv.start)
	// rbSlack is what the budget may hold past its bound by design and by
	// timing: an idle connection's one answer alone (B2; one at a time per
	// connection: the grant makes it busy, and a busy one is granted only
	// what the budget has left), and per loop, an answer counted twice
	// for an instant (written, then its reservation released) and a grant
	// made on a count another loop was changing.
	rbSlack = (rbTenants*rbConns + 2*rbLoops) * rbAnswer
	// rbHeapMargin: what the heap may grow past the bytes held (the
	// connections' buffers, the answers kfake builds). The heap is the test
	// process's: the gateway's, kfake's and the test's, an upper bound on
	// the gateway's. It stays well under the bound even without it (16 MiB
	// for 52 MiB counted with max_total_in_flight_bytes at 64 MiB): the
	// answers reserved wait in the broker's sockets, the flow marks keep
	// the client's queue short. The gauge's peak is what shows the bound.
	rbHeapMargin = 8 << 20
)

var rbNames = [rbTenants]string{"alpha", "bravo", "charlie", "delta"}

const rbListener = "    max_in_flight_bytes: 4MiB\n    max_response_bytes: 64KiB\n" +
	"    max_tenant_in_flight_bytes: 16MiB\n    max_total_in_flight_bytes: 16MiB\n"

// replicaEnv boots a gateway in front of a one-broker kfake cluster (every
// connection reaches the leader) with one key per tenant of rbNames
// ("<tenant>-app"), listener lines extra, and fills each tenant's orders
// with rbRecords records of its own byte.
func replicaEnv(t *testing.T, extra string) *testEnv {
	t.Helper()
	env, upstream, first := upstreamEnv(t, "    embedded: { brokers: 1, partitions: 1 }\n", false)
	base := testkit.FreePorts(t, 3)
	env.base, env.first, env.nports = base, first, 2
	keys := make([]testKey, 0, rbTenants)
	for _, n := range rbNames {
		keys = append(keys, testKey{id: n + "-app", tenant: n, ops: "produceOrders, consumeOrders"})
	}
	store := env.keyStore(keys, hexSecrets("replica"))
	cfg := shopConfig(upstream, "", loopbackBounds(rbListener+extra), base, base+1, first)
	env.start(env.load(cfg, testContract, store), WithWriteTimeout(2*time.Minute))
	env.boot = "127.0.0.1:" + strconv.Itoa(base)
	for i, n := range rbNames {
		prod := env.client(n+"-app", kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for j := 0; j < rbRecords; j++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: rbValue(i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
	}
	return env
}

// rbValue is the value of tenant i's records: its own byte.
func rbValue(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, rbRecord) }

// rbFetch is the i-th Fetch of a connection: orders/0 from offset i%32.
func rbFetch(i int) *kmsg.FetchRequest {
	f := kmsg.NewPtrFetchRequest()
	f.Version, f.ReplicaID, f.MaxWaitMillis, f.MaxBytes, f.SessionEpoch = 11, -1, 100, 1<<20, -1
	tp := kmsg.NewFetchRequestTopic()
	tp.Topic = "orders"
	pp := kmsg.NewFetchRequestTopicPartition()
	pp.FetchOffset, pp.PartitionMaxBytes = int64(i%32), 1<<20
	tp.Partitions = append(tp.Partitions, pp)
	f.Topics = append(f.Topics, tp)
	return f
}

// rbPeaks samples, until stopped, the bytes held against the replica's
// budget and each tenant's share; it keeps the largest of each.
type rbPeaks struct {
	replica atomic.Int64
	tenants [rbTenants]atomic.Int64
	samples atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func samplePeaks(env *testEnv) *rbPeaks {
	p := &rbPeaks{stop: make(chan struct{}), done: make(chan struct{})}
	raise := func(a *atomic.Int64, v int64) {
		if v > a.Load() {
			a.Store(v)
		}
	}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			raise(&p.replica, env.e.env.Bounds.Replica.Used())
			for i, n := range rbNames {
				if ten := env.e.env.Bounds.Tenants.Get(n); ten != nil {
					raise(&p.tenants[i], ten.Share.Used())
				}
			}
			p.samples.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	return p
}

// end stops the sampling (once) and waits for it.
func (p *rbPeaks) end() { p.once.Do(func() { close(p.stop) }); <-p.done }

// scrape reads a series off the engine's /metrics.
func scrape(t *testing.T, env *testEnv, name string) int64 {
	t.Helper()
	var buf bytes.Buffer
	env.e.Metrics().WritePrometheus(&buf)
	for _, line := range strings.Split(buf.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			must(t, err)
			return n
		}
	}
	t.Fatalf("%s not on /metrics", name)
	return 0
}

// checkSeries checks the replica budget's series while it is reached: the
// bytes held near the bound (read at the scrape), the bound, the waits.
func checkSeries(t *testing.T, env *testEnv) {
	t.Helper()
	if g := scrape(t, env, session.InFlightSeries[0]); g < rbTotal-rbAnswer-rbSlack || g > rbTotal+rbSlack {
		t.Errorf("the gauge says %d bytes held, the budget %d (bound %d)", g, env.e.env.Bounds.Replica.Used(), rbTotal)
	}
	if l := scrape(t, env, session.InFlightSeries[1]); l != rbTotal {
		t.Errorf("the bound's gauge says %d, want %d", l, rbTotal)
	}
	if w := scrape(t, env, session.InFlightSeries[2]); w == 0 || w > env.e.env.Series.ReplicaWaits.Load() {
		t.Errorf("the waits' counter says %d, counted %d", w, env.e.env.Series.ReplicaWaits.Load())
	}
}

// rbReader is a stalled connection read at last, off the test's goroutine:
// its answers are checked in order, each the tenant's records from the
// offset asked.
type rbReader struct {
	c      net.Conn
	tenant int
	first  int32 // the correlation id of its first Fetch
}

// readAll reads the connection's rbFetches answers and checks them.
func (r rbReader) readAll() error {
	_ = r.c.(*net.TCPConn).SetReadBuffer(4 << 20)
	want := rbValue(r.tenant)
	for i := 0; i < rbFetches; i++ {
		_ = r.c.SetReadDeadline(time.Now().Add(rawDeadline))
		var sz [4]byte
		if _, err := io.ReadFull(r.c, sz[:]); err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		b := make([]byte, binary.BigEndian.Uint32(sz[:]))
		if _, err := io.ReadFull(r.c, b); err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		resp := kmsg.FetchResponse{Version: 11}
		corr, body, err := codec.ParseResponseHeader(b, resp.Key(), resp.Version)
		if err == nil {
			err = resp.ReadFrom(body)
		}
		switch {
		case err != nil:
			return fmt.Errorf("answer %d: %w", i, err)
		case corr != r.first+int32(i):
			return fmt.Errorf("answer %d: correlation %d, want %d", i, corr, r.first+int32(i))
		case len(resp.Topics) != 1 || resp.Topics[0].Topic != "orders" || len(resp.Topics[0].Partitions) != 1:
			return fmt.Errorf("answer %d: topics %+v", i, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		var batch kmsg.RecordBatch
		if p.ErrorCode != 0 || batch.ReadFrom(p.RecordBatches) != nil {
			return fmt.Errorf("answer %d: error %d, %d record bytes", i, p.ErrorCode, len(p.RecordBatches))
		}
		off := int64(i % 32)
		if batch.FirstOffset > off || off >= batch.FirstOffset+int64(batch.NumRecords) || !bytes.Contains(batch.Records, want) {
			return fmt.Errorf("answer %d: a batch of %d records from %d, not the tenant's from %d", i, batch.NumRecords, batch.FirstOffset, off)
		}
	}
	return nil
}

// stallTenants opens rbConns connections per tenant, each sending its
// rbFetches Fetches and reading nothing.
func stallTenants(t *testing.T, env *testEnv) []rbReader {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(int(env.nodePort(0)))
	var conns []*rawConn
	var readers []rbReader
	for i, n := range rbNames {
		for j := 0; j < rbConns; j++ {
			r := dialRaw(t, addr, n+"-app", env.keys[n+"-app"])
			conns = append(conns, r)
			readers = append(readers, rbReader{c: r.c, tenant: i, first: r.corr + 1})
		}
	}
	for f := 0; f < rbFetches; f++ { // the connections' Fetches interleaved
		for _, r := range conns {
			r.send(rbFetch(f))
		}
	}
	return readers
}

// B2 (issue 24.5): four tenants, each under its own share, together reach
// the replica's budget (on_tenant_budget_exceeded: wait): their
// connections wait for it, the bytes held never pass it but by one answer
// alone per connection, the gateway's heap grows by no more, and each
// client, once it reads, gets every answer, its own records.
func TestReplicaBudgetWait(t *testing.T) {
	replicaBudget(t, "")
}

// B2 (issue 24.5): on_tenant_budget_exceeded: close closes a connection at
// its tenant's share, never at the replica's budget: with every tenant
// under its share, the replica's budget reached makes the connections
// wait, none is closed, and every answer arrives.
func TestReplicaBudgetClose(t *testing.T) {
	replicaBudget(t, "    on_tenant_budget_exceeded: close\n")
}

func replicaBudget(t *testing.T, extra string) {
	env := replicaEnv(t, extra)
	base := liveHeap()
	peaks := samplePeaks(env)
	defer peaks.end() // on a failure before the end
	readers := stallTenants(t, env)
	waits := env.e.env.Series.ReplicaWaits
	start := time.Now()
	waitUntil(t, 60*time.Second, "the replica's budget reached, a wait counted", func() bool {
		return time.Since(start) > 2*time.Second && waits.Load() > 0 && peaks.replica.Load() >= rbTotal-rbAnswer
	})
	held, growth := env.e.env.Bounds.Replica.Used(), liveHeap()-base
	checkSeries(t, env)
	if growth > rbTotal+rbSlack+rbHeapMargin {
		t.Errorf("the heap grew by %d bytes holding %d, over the bound %d plus %d", growth, held, rbTotal, rbSlack+rbHeapMargin)
	}
	readAllOf(t, readers)
	peaks.end()
	if p := peaks.replica.Load(); p > rbTotal+rbSlack {
		t.Errorf("the replica held %d bytes, over its bound %d plus one answer alone per connection (%d)", p, rbTotal, rbSlack)
	}
	for i, n := range rbNames {
		if p := peaks.tenants[i].Load(); p >= rbShare {
			t.Errorf("tenant %s held %d bytes: its share %d was reached, not the replica's", n, p, rbShare)
		}
	}
	sig := env.e.env.Signals
	if sig.BudgetWaited() != 0 || sig.BudgetClosed() != 0 {
		t.Errorf("tenant_budget waited %d, closed %d: no tenant's share is reached", sig.BudgetWaited(), sig.BudgetClosed())
	}
	waitUntil(t, 10*time.Second, "every byte given back", func() bool { return env.e.env.Bounds.Replica.Used() == 0 })
	t.Logf("replica peak %d bytes (bound %d, slack %d) in %d samples; %d waits; heap +%d bytes",
		peaks.replica.Load(), rbTotal, rbSlack, peaks.samples.Load(), waits.Load(), growth)
}

// readAllOf reads every stalled connection at once and fails on the first
// answer missing or wrong.
func readAllOf(t *testing.T, readers []rbReader) {
	t.Helper()
	errs := make(chan error, len(readers))
	for _, r := range readers {
		go func() { errs <- r.readAll() }()
	}
	for range readers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
