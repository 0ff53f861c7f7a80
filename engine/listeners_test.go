package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 13.3: no path assumes a listener. The TLS listener alone, the
// plaintext fallback alone and both serve a client through each listener
// declared, each announcing the brokers its own way; neither is refused at
// load with a clear error.
func TestListenerCombinations(t *testing.T) {
	t.Run("neither", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "asyncapi.yaml", []byte(testContract))
		writeFile(t, dir, "flexway.yaml", []byte("version: 1\ncontracts: { asyncapi: ./asyncapi.yaml }\n"+
			"upstreams: { events: { protocol: kafka, embedded: { brokers: 1 } } }\nlisteners:\n  kafka:\n    max_connections: 16\n"))
		_, err := configs.Load(filepath.Join(dir, "flexway.yaml"))
		if err == nil || !strings.Contains(err.Error(), "listeners.kafka") || !strings.Contains(err.Error(), "neither tls nor plaintext") {
			t.Fatalf("no listener: %v, want a refusal naming listeners.kafka", err)
		}
	})
	plaintextClient := func(t *testing.T, boot, id, key string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(boot), kgo.SASL(plainAuth(id, key)),
			kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// roundTrip produces one record through cl and reads it back through
	// a consumer made by mk; the brokers announced must be wantHost.
	roundTrip := func(t *testing.T, mk func(...kgo.Opt) *kgo.Client, tag, wantHost string) {
		t.Helper()
		produceN(t, mk(), "orders", 1, tag)
		got := consumeAll(t, mk(kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 1, 15*time.Second)
		found := false
		for _, r := range got {
			found = found || strings.HasPrefix(string(r.Value), tag)
		}
		if !found {
			t.Fatalf("%s: the record produced was not read back (%d records)", tag, len(got))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := kadm.NewClient(mk()).Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range md.Brokers {
			if !strings.HasPrefix(b.Host, wantHost) {
				t.Fatalf("%s: broker %d announced as %s, want %s…", tag, b.NodeID, b.Host, wantHost)
			}
		}
	}
	t.Run("plaintext only", func(t *testing.T) {
		env := newTestEnv(t, "")
		roundTrip(t, func(o ...kgo.Opt) *kgo.Client {
			return plaintextClient(t, env.boot, "acme-app", env.keys["acme-app"], o...)
		}, "plain", "127.0.0.1")
	})
	t.Run("tls only", func(t *testing.T) {
		te := newTLSEnv(t, "")
		if te.e.Snapshot().Listener.Plaintext != nil {
			t.Fatal("the TLS env declares the fallback")
		}
		roundTrip(t, func(o ...kgo.Opt) *kgo.Client { return te.saslClient("acme-app", tls.VersionTLS13, o...) }, "tls", "broker-")
	})
	t.Run("both", func(t *testing.T) {
		base := testkit.FreePorts(t, 4)
		te := newTLSEnv(t, fmt.Sprintf(`    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: 0 }
`, base, base+3))
		roundTrip(t, func(o ...kgo.Opt) *kgo.Client { return te.saslClient("acme-app", tls.VersionTLS13, o...) }, "both-tls", "broker-")
		boot := fmt.Sprintf("127.0.0.1:%d", base)
		roundTrip(t, func(o ...kgo.Opt) *kgo.Client { return plaintextClient(t, boot, "acme-app", te.keys["acme-app"], o...) }, "both-plain", "127.0.0.1")
		// A certificate client and a key client at once, on their listeners.
		c := te.certClient("billing")
		produceN(t, c, "orders", 1, "both-cert")
	})
}
