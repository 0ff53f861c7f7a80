package engine

// U1 with SASL: PLAIN and SCRAM-SHA-256 to a broker, and a wrong password
// (kfake and Apache Kafka): refused at start, once running the client reset
// and told SASL_AUTHENTICATION_FAILED, the failure logged without the
// password.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// U1: SASL PLAIN in clear text, and SCRAM-SHA-256.
func TestUpstreamSASLPlainAndSCRAM256(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256"} {
		t.Run(mech, func(t *testing.T) {
			k := newSecuredKafka(t, securedOpts{mech: mech})
			env := secureEnv(t, k.upstream("", ""))
			produceConsume(t, env, 10, mech)
			countBrokerConns(t, env, k)
		})
	}
}

// A wrong password (PLAIN or SCRAM-SHA-512): the gateway does not start on
// it; once started (a reload reads the password file again), the client
// whose request needed the broker is reset at once (invariant 43), not held, and the
// gateway logs "kafka upstream authentication failed" with the upstream's
// name, never the password. The right password back, a client is served.
func TestUpstreamWrongPassword(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			k := newSecuredKafka(t, securedOpts{tls: mech == "SCRAM-SHA-512", mech: mech})
			const wrong = "not-the-password"
			wrongFile := writeFile(t, k.dir, "wrong-password", []byte(wrong+"\n"))
			good := k.upstream("", "")
			bad := k.upstream("", fmt.Sprintf("{ mechanism: %s, username: %s, password: %q }", mech, k.user, "file:"+wrongFile))

			if _, err := New(context.Background(), loadWithUpstream(t, bad)); err == nil || !strings.Contains(err.Error(), "events") ||
				strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), k.pass) {
				t.Fatalf("New with a wrong password = %v, want a refusal naming the upstream, without the password", err)
			}

			env := secureEnv(t, good)
			reloadReplacing(t, env, good, bad)
			node := env.nodes()[0]
			addr := fmt.Sprintf("127.0.0.1:%d", env.nodePort(node))
			r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
			metadataOrders(r)
			r.resetWithoutAnswer(10 * time.Second)
			line := env.waitLog(10*time.Second, "kafka upstream authentication failed", "upstream=events", "broker="+strconv.Itoa(int(node)))
			if strings.Contains(line, wrong) || strings.Contains(line, k.pass) {
				t.Fatalf("the log line holds the password: %s", line)
			}
			if !strings.Contains(line, "level=ERROR") {
				t.Errorf("logged at another level than Error: %s", line)
			}

			// Meanwhile a client is told, as a broker refusing it would:
			// its authentication fails (SASL_AUTHENTICATION_FAILED, fatal to
			// the Java client), at once rather than after its timeouts.
			cl := env.client("acme-app")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			began := time.Now()
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
			if _, err := req.RequestWith(ctx, cl); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("Metadata with the gateway's password refused: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			if took := time.Since(began); took > 10*time.Second {
				t.Fatalf("the client was told after %v", took)
			}

			reloadReplacing(t, env, bad, good)
			servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"]))
		})
	}
}

// A wrong password against Apache Kafka (make test-kafka, the SASL modes):
// after a reload reads the wrong one, the client is reset at once
// (invariant 43) and the gateway logs "kafka upstream authentication
// failed", then clients are told SASL_AUTHENTICATION_FAILED; the right one
// back, a client is served.
func TestRealKafkaWrongPassword(t *testing.T) {
	sec := os.Getenv(envKafkaSecurity)
	if _, real := realKafka(); !real || (sec != "sasl_ssl" && sec != "sasl_plaintext") {
		t.Skip("against Apache Kafka's SASL listeners only (make test-kafka)")
	}
	env := newTestEnv(t, "")
	pwFile := filepath.Join(env.dir, "kafka-password")
	good, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	reload := func(pw []byte) {
		must(t, os.WriteFile(pwFile, pw, 0o600))
		snap, err := configs.Load(filepath.Join(env.dir, "flexway.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := env.e.Reload(context.Background(), snap); err != nil {
			t.Fatal(err)
		}
	}
	const wrong = "not-the-password"
	reload([]byte(wrong + "\n"))
	node := env.nodes()[0]
	addr := fmt.Sprintf("127.0.0.1:%d", env.nodePort(node))
	r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
	metadataOrders(r)
	r.resetWithoutAnswer(15 * time.Second)
	line := env.waitLog(15*time.Second, "kafka upstream authentication failed", "upstream=events")
	if strings.Contains(line, wrong) || strings.Contains(line, strings.TrimSpace(string(good))) {
		t.Fatalf("the log line holds a password: %s", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	if _, err := req.RequestWith(ctx, env.client("acme-app")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("Metadata with the gateway's password refused: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	reload(good)
	servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"]))
}
