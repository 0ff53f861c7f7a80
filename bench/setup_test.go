package bench

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine"
)

// gateway is a whole flexway booted from configuration files on free
// loopback ports, in front of an embedded kfake upstream (one broker, one
// partition), as engine/env_test.go boots it.
type gateway struct {
	e      *engine.Engine
	boot   string   // the cluster shop's bootstrap (plaintext fallback)
	direct []string // the embedded broker(s)
	keyID  string
	key    string
}

const benchContract = `asyncapi: 3.0.0
info: { title: Shop events, version: "1.0.0" }
channels:
  orders:
    address: "{tenant}.orders"
    parameters:
      tenant: { x-flexway-bind: tenant }
operations:
  produceOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
  consumeOrders:
    action: receive
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
components:
  securitySchemes:
    apiKey: { type: plain }
`

// freeRange finds n consecutive free ports on loopback, below the kernel's
// ephemeral range (32768 and up), where an outgoing connection of any process
// can take a port between this probe and the gateway's bind.
func freeRange(tb testing.TB, n int) int {
	tb.Helper()
	for try := 0; try < 200; try++ {
		base := 20000 + rand.IntN(12000-n)
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
	tb.Fatal("no free port range")
	return 0
}

// startGateway writes flexway.yaml, asyncapi.yaml and api-keys.yaml to a
// temporary folder, loads them and serves; Stop runs at cleanup.
func startGateway(tb testing.TB) *gateway {
	tb.Helper()
	dir := tb.TempDir()
	base := freeRange(tb, 2) // bootstrap + the one node
	g := &gateway{keyID: "acme-app", key: hex.EncodeToString([]byte("bench-key-acme-app"))}
	h := configs.HashKey(g.key)
	store := fmt.Sprintf("keys:\n  - id: %s\n    hash: \"sha256:%s\"\n    tenant: acme\n    operations: [produceOrders, consumeOrders]\n",
		g.keyID, hex.EncodeToString(h[:]))
	cfg := fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events:
    protocol: kafka
    embedded: { brokers: 1, partitions: 1 }
auth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: 0 }
`, base, base+1)
	for name, body := range map[string]string{
		"flexway.yaml":  cfg,
		"asyncapi.yaml": benchContract,
		"api-keys.yaml": store,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	snap, err := configs.Load(filepath.Join(dir, "flexway.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if os.Getenv("BENCH_GW_LOG") == "" {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e, err := engine.New(context.Background(), snap, engine.WithLogger(log))
	if err != nil {
		tb.Fatal(err)
	}
	go e.Serve()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Ready(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		e.Stop(ctx)
	})
	g.e = e
	g.boot = fmt.Sprintf("127.0.0.1:%d", base)
	g.direct = e.EmbeddedBrokers()["events"]
	if len(g.direct) == 0 {
		tb.Fatal("no embedded broker")
	}
	return g
}
