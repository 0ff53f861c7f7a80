package engine

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// testEnv is a whole gateway booted from configuration files on free
// ports, in front of an embedded kfake upstream.
type testEnv struct {
	t      *testing.T
	e      *Engine
	dir    string
	boot   string
	keys   map[string]string // key id -> key
	direct []string          // the embedded brokers
	logs   *syncBuf
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

// testKeys: id -> tenant, operations.
var testKeys = []struct {
	id, tenant, ops string
	expired         bool
}{
	{"acme-app", "acme", "produceOrders, consumeOrders, consumePayments", false},
	{"acme-orders-reader", "acme", "consumeOrders", false},
	{"globex-app", "globex", "produceOrders, consumeOrders", false},
	{"acme-old", "acme", "produceOrders", true},
	{"bad-tenant", "acme_corp", "produceOrders", false},
}

// freeRange finds n consecutive free ports on loopback.
func freeRange(t *testing.T, n int) int {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if base+n > 65000 {
			continue
		}
		ok := true
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
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
// bootstrap and nports-1 brokers) in front of three embedded brokers.
func newTestEnvPorts(t *testing.T, listenerExtra string, nports int, opt ...Option) *testEnv {
	t.Helper()
	dir := t.TempDir()
	base := freeRange(t, nports+1)
	env := &testEnv{t: t, dir: dir, keys: map[string]string{}, logs: &syncBuf{ch: make(chan string, 4096)}}
	var store strings.Builder
	store.WriteString("keys:\n")
	for i, k := range testKeys {
		key := hex.EncodeToString([]byte(fmt.Sprintf("test-key-%d-%s", i, k.id)))
		env.keys[k.id] = key
		h := configs.HashKey(key)
		fmt.Fprintf(&store, "  - id: %s\n    hash: \"sha256:%s\"\n    tenant: %s\n    operations: [%s]\n", k.id, hex.EncodeToString(h[:]), k.tenant, k.ops)
		if k.expired {
			store.WriteString("    expires_at: 2020-01-01T00:00:00Z\n")
		}
	}
	cfg := fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events:
    protocol: kafka
    embedded: { brokers: 3, partitions: 2 }
auth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
%s    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: 0 }
`, listenerExtra, base, base+nports-1)
	must(t, os.WriteFile(filepath.Join(dir, "flexway.yaml"), []byte(cfg), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "asyncapi.yaml"), []byte(testContract), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "api-keys.yaml"), []byte(store.String()), 0o600))
	snap, err := configs.Load(filepath.Join(dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(env.logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := append([]Option{WithLogger(log), WithLoops(2)}, opt...)
	e, err := New(context.Background(), snap, opts...)
	if err != nil {
		t.Fatal(err)
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
	env.boot = fmt.Sprintf("127.0.0.1:%d", base)
	env.direct = e.EmbeddedBrokers()["events"]
	return env
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
