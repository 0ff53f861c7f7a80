package engine

// End-to-end tests of consumer groups through the gateway (D6, N1, N2):
// franz-go (two members rebalancing, then a third resuming), with the
// helpers every group test shares (e2e_groups_libs_test.go holds the other
// clients'). Each checks what a user would: every record arrives once, the
// committed offsets are found again by a new consumer of the same group,
// the broker holds the group as <tenant>.~g.<group> only, and the other
// tenant does not see it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceParts produces n records "<prefix>-<i>" to orders through the
// gateway as acme-app, alternating partitions 0 and 1 (the test
// environment's topics have two).
func produceParts(t *testing.T, env *testEnv, n int, prefix string) []string {
	t.Helper()
	cl := env.client("acme-app", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var vals []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%d", prefix, i)
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		vals = append(vals, v)
	}
	cl.Close()
	return vals
}

// directAdmin is a kadm client on the embedded brokers (physical names).
func directAdmin(env *testEnv) *kadm.Client { return kadm.NewClient(env.directClient()) }

// checkBrokerGroup: the broker holds <tenant>.~g.<group> (under the env's
// channel prefix) and no group named <group>; the offsets committed on
// acme.orders sum to want.
func checkBrokerGroup(t *testing.T, env *testEnv, group string, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := directAdmin(env)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("direct ListGroups: %v", err)
	}
	names := listed.Groups()
	phys, topic := env.group("acme", group), env.phys("acme", "orders")
	if !slices.Contains(names, phys) || slices.Contains(names, group) {
		t.Fatalf("the broker holds groups %q, want %s and no %s", names, phys, group)
	}
	offs, err := adm.FetchOffsets(ctx, phys)
	if err != nil {
		t.Fatalf("direct FetchOffsets: %v", err)
	}
	var sum int64
	for tp, ps := range offs {
		if tp != topic {
			t.Fatalf("the group committed offsets on %q", tp)
		}
		for _, o := range ps {
			if o.Err != nil {
				t.Fatalf("offset %s/%d: %v", tp, o.Partition, o.Err)
			}
			sum += o.At
		}
	}
	if sum != want {
		t.Fatalf("offsets committed on %s sum to %d, want %d (%v)", topic, sum, want, offs.Offsets())
	}
}

// member is one franz-go group member through the gateway: it polls,
// commits what it polled, then lets a rebalance happen (each record is
// handled once across the members).
type member struct {
	name string
	cl   *kgo.Client
	mu   sync.Mutex
	got  []string
	owns map[int32]bool
	errs []error
	stop context.CancelFunc
	done chan struct{}
}

func (m *member) snapshot() (got []string, owns []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, ok := range m.owns {
		if ok {
			owns = append(owns, p)
		}
	}
	sort.Slice(owns, func(i, j int) bool { return owns[i] < owns[j] })
	return append([]string(nil), m.got...), owns
}

func startMember(t *testing.T, env *testEnv, name, group string) *member {
	t.Helper()
	m := &member{name: name, owns: map[int32]bool{}, done: make(chan struct{})}
	track := func(own bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for topic, parts := range ps {
				if topic != "orders" {
					m.errs = append(m.errs, fmt.Errorf("assigned topic %q", topic))
				}
				for _, p := range parts {
					m.owns[p] = own
				}
			}
		}
	}
	m.cl = env.client("acme-app",
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.SessionTimeout(6*time.Second),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.FetchMaxWait(300*time.Millisecond),
		kgo.OnPartitionsAssigned(track(true)),
		kgo.OnPartitionsRevoked(track(false)),
		kgo.OnPartitionsLost(track(false)),
	)
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := m.cl.PollRecords(pctx, 100)
			pcancel()
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					m.mu.Lock()
					m.errs = append(m.errs, fmt.Errorf("fetch %s/%d: %w", topic, p, err))
					m.mu.Unlock()
				}
			})
			recs := fs.Records()
			if len(recs) > 0 {
				cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := m.cl.CommitRecords(cctx, recs...)
				ccancel()
				m.mu.Lock()
				if err != nil {
					m.errs = append(m.errs, fmt.Errorf("commit: %w", err))
				}
				for _, r := range recs {
					if r.Topic != "orders" {
						m.errs = append(m.errs, fmt.Errorf("record under topic %q", r.Topic))
					}
					m.got = append(m.got, string(r.Value))
				}
				m.mu.Unlock()
			}
			m.cl.AllowRebalance()
		}
	}()
	return m
}

// close stops polling and leaves the group.
func (m *member) close() {
	m.stop()
	<-m.done
	m.cl.AllowRebalance()
	m.cl.Close()
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// D6, N1, N2, D9: a franz-go consumer group of two members rebalancing;
// each record consumed once across them, offsets committed; a third
// member of the group starts from the committed offsets. The broker holds
// acme.~g.billing, never billing; globex does not see it.
func TestFranzConsumerGroupRebalance(t *testing.T) {
	env := newTestEnv(t, "")
	m1, m2, all := rebalanceTwoMembers(t, env)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acmeAdm := kadm.NewClient(env.client("acme-app"))
	checkGroupDescribed(t, ctx, env, acmeAdm)
	checkGroupListed(t, ctx, env, acmeAdm)

	m1.close()
	m2.close()
	checkConsumedOnce(t, m1, m2, all)
	checkBrokerGroup(t, env, "billing", int64(len(all)))
	checkGatewayOffsets(t, ctx, acmeAdm, int64(len(all)))

	third := resumeNewMember(t, env)
	checkBrokerGroup(t, env, "billing", int64(len(all)+len(third)))
}

// rebalanceTwoMembers starts m1 of billing, which consumes 20 records,
// then m2, and waits until the group gave each one partition and the two
// consumed 20 more records; all is the 40 records produced.
func rebalanceTwoMembers(t *testing.T, env *testEnv) (m1, m2 *member, all []string) {
	first := produceParts(t, env, 20, "a")
	m1 = startMember(t, env, "m1", "billing")
	waitFor(t, 15*time.Second, "m1 to consume the first 20 records", func() bool {
		got, _ := m1.snapshot()
		return len(got) >= len(first)
	})
	m2 = startMember(t, env, "m2", "billing")
	waitFor(t, 15*time.Second, "the group to rebalance to one partition each", func() bool {
		_, o1 := m1.snapshot()
		_, o2 := m2.snapshot()
		return len(o1) == 1 && len(o2) == 1 && o1[0] != o2[0]
	})
	second := produceParts(t, env, 20, "b")
	all = append(append([]string(nil), first...), second...)
	waitFor(t, 15*time.Second, "the members to consume all 40 records", func() bool {
		g1, _ := m1.snapshot()
		g2, _ := m2.snapshot()
		return len(g1)+len(g2) >= len(all)
	})
	return m1, m2, all
}

// checkGroupDescribed, while both members are in billing: DescribeGroups
// through the gateway shows them under the short names, without the
// client's host or the tenant's prefix (D6, D9); the broker holds their
// subscriptions and assignments under the physical names (N1).
func checkGroupDescribed(t *testing.T, ctx context.Context, env *testEnv, acmeAdm *kadm.Client) {
	dg, err := acmeAdm.DescribeGroups(ctx, "billing")
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	g := dg["billing"]
	if g.Err != nil || g.Group != "billing" || g.ProtocolType != "consumer" || len(g.Members) != 2 {
		t.Fatalf("described %+v (err %v)", g, g.Err)
	}
	for _, mb := range g.Members {
		if mb.ClientHost != "" || strings.HasPrefix(mb.ClientID, "acme.") {
			t.Fatalf("member shown with host %q, client id %q", mb.ClientHost, mb.ClientID)
		}
		join, ok := mb.Join.AsConsumer()
		if !ok || !slices.Equal(join.Topics, []string{"orders"}) {
			t.Fatalf("member subscription %+v", mb.Join)
		}
		as, ok := mb.Assigned.AsConsumer()
		if !ok || len(as.Topics) != 1 || as.Topics[0].Topic != "orders" {
			t.Fatalf("member assignment %+v", mb.Assigned)
		}
	}
	// N1: the broker holds the subscriptions and assignments under the physical names.
	physGroup, physOrders := env.group("acme", "billing"), env.phys("acme", "orders")
	ddg, err := directAdmin(env).DescribeGroups(ctx, physGroup)
	if err != nil {
		t.Fatalf("direct DescribeGroups: %v", err)
	}
	if dgr := ddg[physGroup]; len(dgr.Members) != 2 {
		t.Fatalf("the broker's group: %+v", dgr)
	}
	for _, mb := range ddg[physGroup].Members {
		join, ok := mb.Join.AsConsumer()
		as, ok2 := mb.Assigned.AsConsumer()
		if !ok || !ok2 || !slices.Equal(join.Topics, []string{physOrders}) || len(as.Topics) != 1 || as.Topics[0].Topic != physOrders ||
			!strings.HasPrefix(mb.ClientID, "acme.") {
			t.Fatalf("the broker holds member %s (client id %q): subscription %+v, assignment %+v", mb.MemberID, mb.ClientID, join, as)
		}
	}
}

// checkGroupListed (N2): acme lists billing by its short name; globex sees
// none of acme's groups.
func checkGroupListed(t *testing.T, ctx context.Context, env *testEnv, acmeAdm *kadm.Client) {
	listed, err := acmeAdm.ListGroups(ctx)
	if err != nil || !slices.Contains(listed.Groups(), "billing") {
		t.Fatalf("acme's ListGroups: %q, %v", listed.Groups(), err)
	}
	for _, name := range listed.Groups() {
		if strings.Contains(name, "~") || strings.Contains(name, "acme") {
			t.Fatalf("acme's ListGroups shows %q", name)
		}
	}
	glisted, err := kadm.NewClient(env.client("globex-app")).ListGroups(ctx)
	if err != nil {
		t.Fatalf("globex's ListGroups: %v", err)
	}
	if names := glisted.Groups(); len(names) != 0 {
		t.Fatalf("globex's ListGroups shows %q", names)
	}
}

// checkConsumedOnce, the members closed: neither met an error, each of all
// was consumed exactly once across the two, and both consumed some of the
// second batch (the rebalance gave each a partition).
func checkConsumedOnce(t *testing.T, m1, m2 *member, all []string) {
	g1, _ := m1.snapshot()
	g2, _ := m2.snapshot()
	for _, m := range []*member{m1, m2} {
		if len(m.errs) > 0 {
			t.Fatalf("%s: %v", m.name, m.errs)
		}
	}
	seen := map[string]int{}
	for _, v := range append(append([]string(nil), g1...), g2...) {
		seen[v]++
	}
	for _, v := range all {
		if seen[v] != 1 {
			t.Fatalf("record %s consumed %d times (m1 %d records, m2 %d)", v, seen[v], len(g1), len(g2))
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), len(all))
	}
	fromB := func(got []string) int {
		n := 0
		for _, v := range got {
			if strings.HasPrefix(v, "b-") {
				n++
			}
		}
		return n
	}
	if fromB(g1) == 0 || fromB(g2) == 0 {
		t.Fatalf("after the rebalance both members should consume: m1 %d, m2 %d of the second batch", fromB(g1), fromB(g2))
	}
}

// checkGatewayOffsets: OffsetFetch of billing through the gateway shows
// short names only, its offsets summing to want.
func checkGatewayOffsets(t *testing.T, ctx context.Context, acmeAdm *kadm.Client, want int64) {
	offs, err := acmeAdm.FetchOffsets(ctx, "billing")
	if err != nil || offs.Error() != nil {
		t.Fatalf("FetchOffsets through the gateway: %v %v", err, offs.Error())
	}
	var sum int64
	for topic, ps := range offs {
		if topic != "orders" {
			t.Fatalf("FetchOffsets through the gateway shows topic %q", topic)
		}
		for _, o := range ps {
			sum += o.At
		}
	}
	if sum != want {
		t.Fatalf("offsets through the gateway sum to %d, want %d", sum, want)
	}
}

// resumeNewMember: a new member of billing resumes from the committed
// offsets, nothing old. Each partition is read in order, so a committed
// record it read again would come before the new ones: once it has the new
// records, what it read is those alone. It returns the new records.
func resumeNewMember(t *testing.T, env *testEnv) []string {
	m3 := startMember(t, env, "m3", "billing")
	waitFor(t, 15*time.Second, "m3 to be assigned both partitions", func() bool {
		_, o := m3.snapshot()
		return len(o) == 2
	})
	third := produceParts(t, env, 4, "c")
	waitFor(t, 15*time.Second, "m3 to consume the new records", func() bool {
		got, _ := m3.snapshot()
		return len(got) >= len(third)
	})
	got3, _ := m3.snapshot()
	sort.Strings(got3)
	if !slices.Equal(got3, third) {
		t.Fatalf("a new member read %q, want only the new records %q (none committed before)", got3, third)
	}
	m3.close()
	got, _ := m3.snapshot()
	sort.Strings(got)
	if !slices.Equal(got, third) || len(m3.errs) > 0 {
		t.Fatalf("m3 consumed %q (errors %v), want %q", got, m3.errs, third)
	}
	return third
}
