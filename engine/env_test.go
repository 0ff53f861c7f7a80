package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// testEnv is a whole gateway booted from configuration files on free
// ports, in front of its upstream: an embedded kfake cluster (three
// brokers, nodes 0-2), or with FLEXWAY_TEST_UPSTREAM=kafka a real Apache
// Kafka broker (FLEXWAY_TEST_KAFKA, default 127.0.0.1:18092; one node, id 1)
// shared by every test, each env under its own random channel prefix.
type testEnv struct {
	t      *testing.T
	e      *Engine
	dir    string
	boot   string
	keys   map[string]string // key id -> key
	direct []string          // the upstream's brokers, reached without the gateway
	logs   *syncBuf
	prefix string // the contract's channel prefix: "" on kfake, "t<random>." on a real broker
	real   bool   // the upstream is a real Kafka broker
	base   int    // the fallback range's first port (the bootstrap)
	first  int32  // the range's first_node_id
	nports int    // the range's size
}

// The upstream the tests run against, chosen by the environment.
const (
	envUpstream = "FLEXWAY_TEST_UPSTREAM" // "kafka": a real broker; unset or "kfake": embedded
	envKafka    = "FLEXWAY_TEST_KAFKA"    // the real broker's PLAINTEXT address
	// How the gateway reaches the real broker (issue 9): "plaintext" (the
	// default), "sasl_ssl" (SCRAM-SHA-512 over TLS) or "sasl_plaintext"
	// (PLAIN). The tests' own direct clients always use envKafka.
	envKafkaSecurity = "FLEXWAY_TEST_KAFKA_SECURITY"
	envKafkaSASLSSL  = "FLEXWAY_TEST_KAFKA_SASL_SSL" // its SASL_SSL address, default 127.0.0.1:18095
	envKafkaSASL     = "FLEXWAY_TEST_KAFKA_SASL"     // its SASL_PLAINTEXT address, default 127.0.0.1:18093
	envKafkaCA       = "FLEXWAY_TEST_KAFKA_CA"       // the SASL_SSL listener's CA, default /tmp/flexway-kafka/tls/ca.crt
	envKafkaUser     = "FLEXWAY_TEST_KAFKA_USER"     // default flexway
	envKafkaPassword = "FLEXWAY_TEST_KAFKA_PASSWORD" // default flexway-secret
)

// realUpstream is the lines of upstreams.events that reach the real
// broker as envKafkaSecurity says (the defaults are scripts/kafka-env.sh's);
// a password goes to a file of dir, as an operator's would.
func realUpstream(t *testing.T, dir, plaintext string) string {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	user, pass := env(envKafkaUser, "flexway"), env(envKafkaPassword, "flexway-secret")
	sasl := func(mech string) string {
		pw := filepath.Join(dir, "kafka-password")
		must(t, os.WriteFile(pw, []byte(pass+"\n"), 0o600))
		return fmt.Sprintf("    sasl: { mechanism: %s, username: %q, password: %q }\n", mech, user, "file:"+pw)
	}
	switch v := os.Getenv(envKafkaSecurity); v {
	case "", "plaintext":
		return fmt.Sprintf("    brokers: [%q]\n", plaintext)
	case "sasl_ssl":
		return fmt.Sprintf("    brokers: [%q]\n    tls: { ca_file: %q }\n", env(envKafkaSASLSSL, "127.0.0.1:18095"),
			env(envKafkaCA, "/tmp/flexway-kafka/tls/ca.crt")) + sasl("SCRAM-SHA-512")
	case "sasl_plaintext":
		return fmt.Sprintf("    brokers: [%q]\n", env(envKafkaSASL, "127.0.0.1:18093")) + sasl("PLAIN")
	default:
		panic(fmt.Sprintf("%s=%q: want plaintext, sasl_ssl or sasl_plaintext", envKafkaSecurity, v))
	}
}

// realKafka reports whether the tests run against a real Kafka broker, and its address.
func realKafka() (string, bool) {
	switch v := os.Getenv(envUpstream); v {
	case "", "kfake", "embedded":
		return "", false
	case "kafka":
		if a := os.Getenv(envKafka); a != "" {
			return a, true
		}
		return "127.0.0.1:18092", true // scripts/kafka-env.sh's KAFKA_PLAINTEXT_PORT, where it is defined
	default:
		panic(fmt.Sprintf("%s=%q: want kafka or kfake", envUpstream, v))
	}
}

// Under a real broker: the tenants and channels whose physical topics each
// env creates (the embedded upstream seeds them itself), and their shape.
var (
	testTenants             = []string{"acme", "globex"}
	testChannels            = []string{"orders", "payments"}
	testPartitions    int32 = 2
	realKafkaNodeID   int32 = 1 // node.id of bench/kafka/server.properties.template
	embeddedNodeCount       = 3
)

// phys is the physical topic of a tenant's channel on the upstream.
func (env *testEnv) phys(tenant, topic string) string { return env.prefix + tenant + "." + topic }

// group is the physical consumer group of a tenant's group id.
func (env *testEnv) group(tenant, g string) string { return env.prefix + tenant + ".~g." + g }

// txn is the physical transactional id of a tenant's transactional id.
func (env *testEnv) txn(tenant, id string) string { return env.prefix + tenant + ".~t." + id }

// nodePort is the fallback port the gateway announces node at, or 0 when
// the node is outside the range (announced as unmapped.invalid).
func (env *testEnv) nodePort(node int32) int32 {
	idx := int(node) - int(env.first)
	if idx < 0 || idx+1 >= env.nports {
		return 0
	}
	return int32(env.base + 1 + idx)
}

// nodes are the upstream's node ids.
func (env *testEnv) nodes() []int32 {
	if env.real {
		return []int32{realKafkaNodeID}
	}
	out := make([]int32, embeddedNodeCount)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

const testContract = `asyncapi: 3.0.0
info: { title: Shop events, version: "1.0.0" }
channels:
  orders:
    address: "{tenant}.orders"
    parameters:
      tenant: { x-flexway-bind: tenant }
  payments:
    address: "{tenant}.payments"
    parameters:
      tenant: { x-flexway-bind: tenant }
operations:
  produceOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop, transactions: true }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
  consumeOrders:
    action: receive
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
  consumePayments:
    action: receive
    channel: { $ref: "#/channels/payments" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
components:
  securitySchemes:
    apiKey: { type: plain }
`

// testKey is a key of a test's store: its id, tenant and operations, and
// whether it expired.
type testKey struct {
	id, tenant, ops string
	expired         bool
}

// testKeys: id -> tenant, operations.
var testKeys = []testKey{
	{"acme-app", "acme", "produceOrders, consumeOrders, consumePayments", false},
	{"acme-orders-reader", "acme", "consumeOrders", false},
	{"acme-orders-producer", "acme", "produceOrders", false},
	{"globex-app", "globex", "produceOrders, consumeOrders", false},
	{"acme-old", "acme", "produceOrders", true},
	{"bad-tenant", "acme_corp", "produceOrders", false},
}

type syncBuf struct {
	ch chan string
	w  io.Writer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	select {
	case s.ch <- string(p):
	default:
	}
	return len(p), nil
}

func newTestEnv(t *testing.T, listenerExtra string, opt ...Option) *testEnv {
	t.Helper()
	return newTestEnvPorts(t, listenerExtra, 4, opt...)
}

// newTestEnvPorts boots with a fallback range of nports ports (the
// bootstrap and nports-1 brokers) in front of the upstream.
func newTestEnvPorts(t *testing.T, listenerExtra string, nports int, opt ...Option) *testEnv {
	t.Helper()
	return newTestEnvWith(t, envConfig{listenerExtra: listenerExtra, nports: nports}, opt...)
}

// envConfig shapes a test env.
type envConfig struct {
	listenerExtra string // lines added under listeners.kafka (4 spaces of indent)
	nports        int    // the fallback range: the bootstrap and nports-1 brokers (default 4)
	firstNodeID   *int32 // first_node_id of the range; default the upstream's first node (0 on kfake, 1 on a real broker)
	upstream      string // the lines under upstreams.events after protocol (4 spaces of indent); default kfake or the real broker
	extra         string // top-level lines appended to flexway.yaml (server:, policies:)
}

func newTestEnvWith(t *testing.T, ec envConfig, opt ...Option) *testEnv {
	t.Helper()
	if ec.nports <= 0 {
		ec.nports = 4
	}
	nports := ec.nports
	upstream := "    embedded: { brokers: 3, partitions: 2 }\n"
	if ec.upstream != "" {
		upstream = ec.upstream
	}
	env, upstream, firstNode := upstreamEnv(t, upstream, ec.upstream == "")
	if ec.firstNodeID != nil {
		firstNode = *ec.firstNodeID
	}
	store := env.keyStore(testKeys, hexSecrets("test-key"))
	// The ports were free when probed; another test (of this process, or
	// of a test pass running beside it) may bind one before the gateway
	// does: another range then.
	var e *Engine
	for try := 1; ; try++ {
		base := testkit.FreePorts(t, nports+1)
		env.base, env.first, env.nports = base, firstNode, nports
		cfg := shopConfig(upstream, "", loopbackBounds(ec.listenerExtra), base, base+nports-1, firstNode) + ec.extra
		var err error
		if e, err = env.tryStart(env.load(cfg, testContract, store), opt...); err == nil {
			break
		}
		if try == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("ports %d-%d taken since probed (%v): another range", base, base+nports-1, err)
	}
	base := env.base
	env.boot = fmt.Sprintf("127.0.0.1:%d", base)
	if !env.real {
		env.direct = e.EmbeddedBrokers()["events"]
	}
	return env
}

// bareEnv is a testEnv with a directory of its own, no key yet, its log
// lines kept.
func bareEnv(t *testing.T) *testEnv {
	return &testEnv{t: t, dir: t.TempDir(), keys: map[string]string{}, logs: &syncBuf{ch: make(chan string, 4096)}}
}

// upstreamEnv is a bareEnv and the lines of its upstream under
// upstreams.events after protocol (4 spaces of indent), with the
// upstream's first node id: upstream as given (node 0), unless real is
// set and the tests run against a real broker: then that broker, the env's
// channels under a prefix of its own, their topics created.
func upstreamEnv(t *testing.T, upstream string, real bool) (env *testEnv, lines string, firstNode int32) {
	t.Helper()
	env = bareEnv(t)
	kafkaAddr, isReal := realKafka()
	if !real || !isReal {
		return env, upstream, 0
	}
	env.real = true
	env.prefix = "t" + randomHex(t, 5) + "."
	env.direct = []string{kafkaAddr}
	lines = realUpstream(t, env.dir, kafkaAddr)
	env.createTopics()
	return env, lines, realKafkaNodeID
}

// keyStore is the api-keys.yaml of keys; each key's secret, made by
// secret(i, id), is kept in env.keys.
func (env *testEnv) keyStore(keys []testKey, secret func(i int, id string) string) string {
	var store strings.Builder
	store.WriteString("keys:\n")
	for i, k := range keys {
		key := secret(i, k.id)
		env.keys[k.id] = key
		h := configs.HashKey(key)
		fmt.Fprintf(&store, "  - id: %s\n    hash: \"sha256:%x\"\n    tenant: %s\n    operations: [%s]\n", k.id, h[:], k.tenant, k.ops)
		if k.expired {
			store.WriteString("    expires_at: 2020-01-01T00:00:00Z\n")
		}
	}
	return store.String()
}

// hexSecrets makes the secrets "<prefix>-<i>-<id>", hex-encoded.
func hexSecrets(prefix string) func(i int, id string) string {
	return func(i int, id string) string {
		return hex.EncodeToString([]byte(fmt.Sprintf("%s-%d-%s", prefix, i, id)))
	}
}

// shopConfig is a flexway.yaml serving cluster shop of the contract
// ./asyncapi.yaml on upstream events (upstream: its lines after protocol),
// the keys of ./api-keys.yaml, authExtra lines under auth before api_keys,
// listenerExtra lines under listeners.kafka, and the plaintext fallback
// ports from..to on loopback, from node firstNode.
func shopConfig(upstream, authExtra, listenerExtra string, from, to int, firstNode int32) string {
	return fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events:
    protocol: kafka
%sauth:
%s  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
%s    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: %d }
`, upstream, authExtra, listenerExtra, from, to, firstNode)
}

// load writes flexway.yaml (cfg), asyncapi.yaml (contract, its channels'
// addresses under env.prefix) and api-keys.yaml (store) into env.dir, and
// loads them.
func (env *testEnv) load(cfg, contract, store string) *configs.Snapshot {
	t := env.t
	t.Helper()
	contract = strings.ReplaceAll(contract, `address: "{tenant}.`, `address: "`+env.prefix+`{tenant}.`)
	must(t, os.WriteFile(filepath.Join(env.dir, "flexway.yaml"), []byte(cfg), 0o600))
	must(t, os.WriteFile(filepath.Join(env.dir, "asyncapi.yaml"), []byte(contract), 0o600))
	must(t, os.WriteFile(filepath.Join(env.dir, "api-keys.yaml"), []byte(store), 0o600))
	snap, err := configs.Load(filepath.Join(env.dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// start boots the gateway of snap for the test (stopped at its end), its
// log lines kept in env.logs.
func (env *testEnv) start(snap *configs.Snapshot, opt ...Option) *Engine {
	env.t.Helper()
	e, err := env.tryStart(snap, opt...)
	if err != nil {
		env.t.Fatal(err)
	}
	return e
}

// tryStart is start, New's error returned (a port taken: another range).
func (env *testEnv) tryStart(snap *configs.Snapshot, opt ...Option) (*Engine, error) {
	t := env.t
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(env.logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	e, err := New(context.Background(), snap, append([]Option{WithLogger(log), WithLoops(2)}, opt...)...)
	if err != nil {
		return nil, err
	}
	go e.Serve()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		e.Stop(ctx)
	})
	env.e = e
	return e, nil
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// createTopics creates the env's physical topics on the real broker
// (auto.create.topics.enable=false there) and waits until every partition
// has a leader; they are deleted when the test ends.
// coordinatorsOnce: a fresh broker creates __consumer_offsets and
// __transaction_state on first use, and answers COORDINATOR_NOT_AVAILABLE
// meanwhile: the first test to need a coordinator waits for them, once.
var coordinatorsOnce sync.Once

func waitCoordinators(t *testing.T, ctx context.Context, adm *kadm.Client) {
	for {
		ok := true
		var last error
		for _, r := range []kadm.FindCoordinatorResponses{
			adm.FindGroupCoordinators(ctx, "flexway-warmup"),
			adm.FindTxnCoordinators(ctx, "flexway-warmup"),
		} {
			r.Each(func(c kadm.FindCoordinatorResponse) {
				if c.Err != nil {
					ok, last = false, c.Err
				}
			})
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the real broker's coordinators never became available: %v", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (env *testEnv) createTopics() {
	t := env.t
	t.Helper()
	var topics []string
	for _, tenant := range testTenants {
		for _, ch := range testChannels {
			topics = append(topics, env.phys(tenant, ch))
		}
	}
	adm := kadm.NewClient(env.directClient())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	coordinatorsOnce.Do(func() { waitCoordinators(t, ctx, adm) })
	resp, err := adm.CreateTopics(ctx, testPartitions, 1, nil, topics...)
	if err != nil {
		t.Fatalf("the real broker at %s: create topics: %v (is it running? scripts/kafka-start.sh)", env.direct[0], err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
	for {
		md, err := adm.Metadata(ctx, topics...)
		if err == nil {
			ready := len(md.Topics) == len(topics)
			for _, td := range md.Topics {
				ready = ready && td.Err == nil && len(td.Partitions) == int(testPartitions)
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
			}
			if ready {
				// The broker's metadata names a leader before the leader's
				// replica manager holds the partition (a Produce then is
				// NOT_LEADER_OR_FOLLOWER, and an acks=0 one is lost): wait
				// until every partition answers ListOffsets.
				var offs kadm.ListedOffsets
				offs, err = adm.ListEndOffsets(ctx, topics...)
				n := 0
				if err == nil {
					offs.Each(func(o kadm.ListedOffset) {
						if o.Err == nil {
							n++
						} else {
							err = o.Err
						}
					})
				}
				if n == len(topics)*int(testPartitions) {
					break
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("topics %v not ready on the real broker: %v", topics, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		// Best effort: keep the shared broker small across runs.
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.direct...))
		if err != nil {
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// client returns a franz-go client through the gateway as key id.
func (env *testEnv) client(id string, opts ...kgo.Opt) *kgo.Client {
	env.t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(env.boot),
		kgo.SASL(plain.Auth{User: id, Pass: env.keys[id]}.AsMechanism()),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(5 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		env.t.Fatal(err)
	}
	env.t.Cleanup(cl.Close)
	return cl
}

// directClient reaches the embedded broker itself (physical names).
func (env *testEnv) directClient(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.direct...)}, opts...)...)
	if err != nil {
		env.t.Fatal(err)
	}
	env.t.Cleanup(cl.Close)
	return cl
}

// waitLog waits for a log line containing all the given strings.
func (env *testEnv) waitLog(d time.Duration, parts ...string) string {
	env.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case line := <-env.logs.ch:
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				return line
			}
		case <-deadline:
			env.t.Fatalf("no log line with %q within %v", parts, d)
			return ""
		}
	}
}

// loopbackBounds turns max_connections_per_ip off unless the test sets it:
// every client of a test comes from 127.0.0.1, many more than a real
// address opens (the bound has its own test, TestConnectionsPerIP).
func loopbackBounds(extra string) string {
	if strings.Contains(extra, "max_connections_per_ip") {
		return extra
	}
	return "    max_connections_per_ip: 0\n" + extra
}
