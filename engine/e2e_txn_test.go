package engine

// End-to-end tests of transactions (D7, N1, N2) and DescribeCluster (D3)
// through the gateway: franz-go (committed and aborted transactions, a
// consume-transform-produce session committing its group's offsets in the
// transaction), kcat and sarama transactional producers. Each checks what a
// user would: a read_committed consumer sees exactly the committed records,
// once; the broker holds the transactional id as <tenant>.~t.<id>, never the
// client's; a key without transactions is refused.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnProduce produces n records "<prefix>-<i>" to orders inside one
// transaction of cl, ended with commit (or abort).
func txnProduce(t *testing.T, cl *kgo.Client, n int, prefix string, commit bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin %s: %v", prefix, err)
	}
	var vals []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%d", prefix, i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprint(i % 4)), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		vals = append(vals, v)
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
	}
	return vals
}

// txnValues reads orders from the start through the gateway as acme-app
// until want records, then a little longer (a record that should not be
// there has time to show up); values sorted.
func txnValues(t *testing.T, env *testEnv, want int, opts ...kgo.Opt) []string {
	t.Helper()
	cl := env.client("acme-app", append([]kgo.Opt{kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	recs := consumeAll(t, cl, want, 15*time.Second)
	recs = append(recs, consumeAll(t, cl, 1, 700*time.Millisecond)...)
	var out []string
	for _, r := range recs {
		if r.Topic != "orders" {
			t.Fatalf("record under topic %q", r.Topic)
		}
		out = append(out, string(r.Value))
	}
	sort.Strings(out)
	return out
}

// txnReadCommitted is the consumer option of a read_committed consumer.
func txnReadCommitted() kgo.Opt { return kgo.FetchIsolationLevel(kgo.ReadCommitted()) }

// brokerTxns lists the broker's transactional ids (physical names).
func brokerTxns(t *testing.T, env *testEnv) map[string]kadm.ListedTransaction {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(env.directClient()).ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatalf("list transactions on the broker: %v", err)
	}
	return listed
}

// checkBrokerTxn: the broker holds acme.~t.<id> (under the env's channel
// prefix), its transaction ended (kfake shows an ended transaction as
// Empty, Kafka as Complete*), and no transactional id named <id>. Of the
// ids under the env's prefix (a real broker is shared by every test, each
// env under its own), every one is in a tenant's namespace.
func checkBrokerTxn(t *testing.T, env *testEnv, id string) {
	t.Helper()
	// EndTxn answers once the broker has decided; a real broker writes the
	// markers after (PrepareCommit, then CompleteCommit): wait for the end.
	listed := brokerTxns(t, env)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); listed = brokerTxns(t, env) {
		if st, ok := listed[env.txn("acme", id)]; !ok || !strings.HasPrefix(st.State, "Prepare") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var names []string
	for name := range listed {
		if strings.HasPrefix(name, env.prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	phys := env.txn("acme", id)
	got, ok := listed[phys]
	if !ok {
		t.Fatalf("the broker does not hold %s: it holds %q", phys, names)
	}
	if _, bad := listed[id]; bad {
		t.Fatalf("the broker holds the client's transactional id %q: %q", id, names)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, env.txn("acme", "")) && !strings.HasPrefix(name, env.txn("globex", "")) {
			t.Fatalf("the broker holds a transactional id outside the tenants' namespaces: %q", name)
		}
	}
	if !slices.Contains([]string{"Empty", "CompleteCommit", "CompleteAbort"}, got.State) {
		t.Fatalf("%s is %s, want its transaction ended", phys, got.State)
	}
}

func txnSorted(vs ...[]string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v...)
	}
	sort.Strings(out)
	return out
}

// D7, N1: franz-go transactions through the gateway, committed and aborted;
// a read_committed consumer sees exactly the committed records, a
// read_uncommitted one every record written; the broker holds
// acme.~t.tx-orders.
func TestFranzTransactions(t *testing.T) {
	env := newTestEnv(t, "")
	prod := env.client("acme-app", kgo.TransactionalID("tx-orders"), kgo.TransactionTimeout(20*time.Second))
	c1 := txnProduce(t, prod, 12, "commit1", true)
	a1 := txnProduce(t, prod, 8, "abort1", false)
	c2 := txnProduce(t, prod, 6, "commit2", true)
	prod.Close()

	want := txnSorted(c1, c2)
	if got := txnValues(t, env, len(want), txnReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed consumed %d records %q, want the %d committed", len(got), got, len(want))
	}
	all := txnSorted(c1, a1, c2)
	if got := txnValues(t, env, len(all)); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted consumed %d records, want %d (the aborted ones were written)", len(got), len(all))
	}
	checkBrokerTxn(t, env, "tx-orders")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	physTxn := env.txn("acme", "tx-orders")
	desc, err := kadm.NewClient(env.directClient()).DescribeTransactions(ctx, physTxn)
	if err != nil {
		t.Fatal(err)
	}
	if d := desc[physTxn]; d.Err != nil || d.ProducerID < 0 {
		t.Fatalf("the broker describes %s as %+v", physTxn, d)
	}

	// The other tenant reads its own (empty) topic: nothing of acme's.
	g := env.client("globex-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), txnReadCommitted())
	if recs := consumeAll(t, g, 1, 1500*time.Millisecond); len(recs) != 0 {
		t.Fatalf("globex read %d of acme's records", len(recs))
	}
}

// D7: a key whose operations declare no transactions (acme-orders-reader:
// consumeOrders only) is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED at
// once, by franz-go's producer and by each transactional API; nothing
// reaches the broker.
func TestTransactionsRefusedWithoutTransactions(t *testing.T) {
	env := newTestEnv(t, "")
	cl := env.client("acme-orders-reader", kgo.TransactionalID("tx-reader"), kgo.RecordRetries(1))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// franz-go asks for its producer id at once: the refusal comes back
	// from BeginTransaction, or else from the first record.
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional produce without transactions: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}

	raw := env.client("acme-orders-reader")
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID = "tx-reader", 1
	apt := kmsg.NewAddPartitionsToTxnRequestTopic()
	apt.Topic, apt.Partitions = "orders", []int32{0}
	ap.Topics = append(ap.Topics, apt)
	// The client writes the highest version announced: v4+ carries
	// transactions in batches.
	apx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	apx.TransactionalID, apx.ProducerID = "tx-reader", 1
	apx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "orders", Partitions: []int32{0}}}
	ap.Transactions = append(ap.Transactions, apx)
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.Group = "tx-reader", "billing"
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.Commit = "tx-reader", true
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group = "tx-reader", "billing"
	tct := kmsg.NewTxnOffsetCommitRequestTopic()
	tct.Topic = "orders"
	tct.Partitions = append(tct.Partitions, kmsg.TxnOffsetCommitRequestTopicPartition{Partition: 0, Offset: 1})
	toc.Topics = append(toc.Topics, tct)
	// Each goes straight to a broker: the client would ask FindCoordinator
	// first, refused already (the group family's).
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, raw); err != nil {
		t.Fatal(err)
	}
	brokers := raw.DiscoveredBrokers()
	if len(brokers) == 0 {
		t.Fatal("no broker discovered")
	}
	for _, req := range []kmsg.Request{ap, ao, et, toc} {
		resp, err := brokers[0].Request(ctx, req)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		var code int16
		switch r := resp.(type) {
		case *kmsg.AddPartitionsToTxnResponse:
			if r.Version >= 4 {
				code = r.Transactions[0].Topics[0].Partitions[0].ErrorCode
			} else {
				code = r.Topics[0].Partitions[0].ErrorCode
			}
		case *kmsg.AddOffsetsToTxnResponse:
			code = r.ErrorCode
		case *kmsg.EndTxnResponse:
			code = r.ErrorCode
		case *kmsg.TxnOffsetCommitResponse:
			code = r.Topics[0].Partitions[0].ErrorCode
		}
		if code != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Fatalf("%T: code %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", resp, code)
		}
	}
	for name := range brokerTxns(t, env) {
		if strings.Contains(name, "tx-reader") {
			t.Fatalf("a refused transactional id reached the broker: %q", name)
		}
	}
}

// D6, D7: a franz-go consume-transform-produce session (GroupTransactSession):
// the group's offsets are committed inside the transaction
// (AddOffsetsToTxn, TxnOffsetCommit) under acme.~g.<group>, with the
// produced copies; a new consumer of the group resumes after them.
func TestFranzGroupTransactSession(t *testing.T) {
	env := newTestEnv(t, "")
	src := produceParts(t, env, 10, "src")
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(env.boot),
		kgo.SASL(plainAuth("acme-app", env.keys["acme-app"])),
		kgo.TransactionalID("tx-ctp"),
		kgo.ConsumerGroup("ctp"),
		kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(5*time.Second),
		kgo.TransactionTimeout(20*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	seen, copies := copyInTransactions(t, sess, len(src))
	if len(seen) != len(src) {
		t.Fatalf("the session read %d of %d records", len(seen), len(src))
	}
	sess.Close()

	// The broker holds the group's offsets, committed in the transaction,
	// under acme.~g.ctp, and the transactional id as acme.~t.tx-ctp.
	checkBrokerTxn(t, env, "tx-ctp")
	actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer acancel()
	physGroup, physOrders := env.group("acme", "ctp"), env.phys("acme", "orders")
	offs, err := kadm.NewClient(env.directClient()).FetchOffsets(actx, physGroup)
	if err != nil {
		t.Fatalf("fetch offsets of %s on the broker: %v", physGroup, err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != physOrders {
			t.Errorf("offset committed for topic %q", o.Topic)
		}
		sum += o.At
	})
	if sum < int64(len(src)) {
		t.Fatalf("offsets committed for %s sum to %d, want at least %d", physGroup, sum, len(src))
	}
	if got := txnValues(t, env, len(src)+len(copies), txnReadCommitted()); !slices.Equal(got, txnSorted(src, copies)) {
		t.Fatalf("read_committed after the session: %q", got)
	}
}

// copyInTransactions runs sess for up to 25 s, until it has read n
// records: each batch it polls is copied ("copy-<value>") to orders in a
// transaction of the session, which commits the group's offsets with it.
// It returns the values read and their copies.
func copyInTransactions(t *testing.T, sess *kgo.GroupTransactSession, n int) (seen map[string]bool, copies []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	seen = map[string]bool{}
	for len(seen) < n && ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch error %s/%d: %v", topic, p, err)
			}
		})
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for _, r := range recs {
			if strings.HasPrefix(string(r.Value), "copy-") {
				continue
			}
			seen[string(r.Value)] = true
			c := "copy-" + string(r.Value)
			copies = append(copies, c)
			sess.Produce(ctx, &kgo.Record{Topic: "orders", Value: []byte(c)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", c, err)
				}
			})
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			t.Fatalf("end: committed %v, %v", committed, err)
		}
	}
	return seen, copies
}

// kcat's transactional producer (librdkafka: InitProducerId,
// AddPartitionsToTxn, EndTxn through the coordinator found by
// FindCoordinator) through the gateway.
func TestKcatTransactionalProducer(t *testing.T) {
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "")
	var in strings.Builder
	var want []string
	for i := 0; i < 15; i++ {
		v := fmt.Sprintf("kt-%d", i)
		fmt.Fprintf(&in, "k%d:%s\n", i%3, v)
		want = append(want, v)
	}
	sort.Strings(want)
	args := env.kcatArgs("acme-app", "-P", "-t", "orders", "-K", ":", "-X", "transactional.id=kt", "-X", "transaction.timeout.ms=20000")
	if _, stderr, err := runExt(t, 30*time.Second, in.String(), "/usr/bin/kcat", args...); err != nil {
		t.Fatalf("kcat transactional produce: %v\nstderr:\n%s", err, stderr)
	}
	if got := txnValues(t, env, len(want), txnReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed consumed %q, want %q", got, want)
	}
	checkBrokerTxn(t, env, "kt")
}

// sarama's transactional producer through the gateway: one transaction
// committed, one aborted.
func TestSaramaTransaction(t *testing.T) {
	env := newTestEnv(t, "")
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "sarama-txn"
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.User = "acme-app"
	cfg.Net.SASL.Password = env.keys["acme-app"]
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "tx-sarama"
	cfg.Producer.Transaction.Timeout = 20 * time.Second
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	prod, err := sarama.NewSyncProducer([]string{env.boot}, cfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			prod.Close()
		}
	}()
	send := func(prefix string, n int, commit bool) []string {
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("begin %s: %v", prefix, err)
		}
		var vals []string
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("%s-%d", prefix, i)
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "orders", Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("send %s: %v", v, err)
			}
			vals = append(vals, v)
		}
		if commit {
			err = prod.CommitTxn()
		} else {
			err = prod.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
		}
		return vals
	}
	c := send("sarama-commit", 10, true)
	send("sarama-abort", 5, false)
	closed = true
	if err := prod.Close(); err != nil {
		t.Fatalf("sarama close: %v", err)
	}
	want := txnSorted(c)
	if got := txnValues(t, env, len(want), txnReadCommitted()); !slices.Equal(got, want) {
		t.Fatalf("read_committed consumed %q, want %q", got, want)
	}
	checkBrokerTxn(t, env, "tx-sarama")
}

// D3, D9: DescribeCluster through the gateway answers the virtual cluster:
// its name, the brokers at the fallback ports, no authorized operations
// even when asked; a request for the controllers is refused in the answer.
func TestDescribeClusterThroughGateway(t *testing.T) {
	env := newTestEnv(t, "")
	cl := env.client("acme-orders-reader")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterID != "shop" || resp.ClusterAuthorizedOperations != math.MinInt32 || resp.ErrorMessage != nil {
		t.Fatalf("DescribeCluster answered %+v", resp)
	}
	direct, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, env.directClient())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != len(direct.Brokers) || len(resp.Brokers) != len(env.nodes()) {
		t.Fatalf("%d brokers through the gateway, %d on the cluster", len(resp.Brokers), len(direct.Brokers))
	}
	if resp.ControllerID != direct.ControllerID {
		t.Fatalf("controller %d, the cluster's is %d", resp.ControllerID, direct.ControllerID)
	}
	for _, b := range resp.Brokers {
		want := env.nodePort(b.NodeID)
		if !slices.Contains(env.nodes(), b.NodeID) || want == 0 {
			t.Fatalf("broker %d announced: the upstream's nodes are %v, in the range from node %d", b.NodeID, env.nodes(), env.first)
		}
		if b.Host != "127.0.0.1" || b.Port != want || b.Rack != nil {
			t.Fatalf("broker %d announced at %s:%d (rack %v), want 127.0.0.1:%d", b.NodeID, b.Host, b.Port, b.Rack, want)
		}
	}
	if direct.ClusterID == "shop" {
		t.Fatal("the upstream cluster is named like the virtual one: the test proves nothing")
	}

	ctrl := kmsg.NewPtrDescribeClusterRequest()
	ctrl.EndpointType = 2
	resp, err = ctrl.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.MismatchedEndpointType.Code || len(resp.Brokers) != 0 {
		t.Fatalf("DescribeCluster of the controllers answered %+v", resp)
	}
}
