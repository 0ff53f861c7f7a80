package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// I6, KIP-368: franz-go re-authenticates on its own before the announced
// session lifetime; its session goes on across several lifetimes.
func TestReauthenticationFranzGo(t *testing.T) {
	env := newTestEnv(t, "", WithSessionLifetime(2*time.Second))
	before := env.e.env.Signals.RequestCount(int16(kmsg.SASLAuthenticate), signals.Allowed)
	prod := env.client("acme-app")
	// Produce across three lifetimes at least, and until the
	// re-authentications are counted: one authentication per connection,
	// then at least two more on the producing connection. A slow machine
	// only makes the loop longer; without re-authentication it ends at the
	// deadline, or at a produce refused past the session's end.
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	n := 0
	var auths uint64
	for {
		produceN(t, prod, "orders", 1, "reauth")
		n++
		auths = env.e.env.Signals.RequestCount(int16(kmsg.SASLAuthenticate), signals.Allowed) - before
		if auths >= 4 && time.Since(start) >= 7*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d successful SaslAuthenticate over %d produces: no re-authentication", auths, n)
		}
		time.Sleep(200 * time.Millisecond) // a producer's pace
	}
}

// I6: a client that does not re-authenticate is closed at its next request past the session's end.
func TestSessionEndWithoutReauth(t *testing.T) {
	env := newTestEnv(t, "", WithSessionLifetime(time.Second))
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	time.Sleep(1200 * time.Millisecond)
	r.send(kmsg.NewPtrMetadataRequest())
	r.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "session ended without re-authentication")
}

// I6: a re-authentication must prove the same principal.
func TestReauthAsAnotherPrincipal(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.saslPlain("acme-orders-reader", env.keys["acme-orders-reader"])
	if aur := r.authAnswer(); aur.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as another principal: error %d", aur.ErrorCode)
	}
	r.expectClosed(5 * time.Second)
	line := env.waitLog(3*time.Second, "kafka authentication refused", "another principal")
	if strings.Contains(line, env.keys["acme-orders-reader"]) {
		t.Fatal("the log shows the key")
	}
}

// reloadStore rewrites the key store without the given key ids and reloads.
func reloadWithout(t *testing.T, env *testEnv, ids ...string) error {
	t.Helper()
	path := filepath.Join(env.dir, "api-keys.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, id := range ids {
		re := regexp.MustCompile(`(?m)^  - id: ` + regexp.QuoteMeta(id) + `\n(    .*\n)*`)
		s = re.ReplaceAllString(s, "")
	}
	must(t, os.WriteFile(path, []byte(s), 0o600))
	snap, err := configs.Load(filepath.Join(env.dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return env.e.Reload(context.Background(), snap)
}

// S2, the seed's example: remove a key from the store and reload: the
// running producer's next request closes its connection, and its
// reconnection fails authentication (SASL_AUTHENTICATION_FAILED).
func TestReloadRevokesRemovedKey(t *testing.T) {
	env := newTestEnv(t, "")
	prod := env.client("acme-orders-producer", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))
	other := env.client("globex-app")
	produceN(t, prod, "orders", 3, "before")
	if err := reloadWithout(t, env, "acme-orders-producer"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr() }()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a produce with the removed key succeeded")
		}
	case <-time.After(20 * time.Second):
		// franz-go may keep retrying past its context; the logs below tell what the gateway did.
		t.Log("the producer was still retrying after 20 s")
	}
	// Its connection was closed at that request, its reconnection refused.
	env.waitLog(5*time.Second, "credential revoked on reload", "key removed from the store")
	env.waitLog(5*time.Second, "kafka authentication refused", "unknown key", "user=acme-orders-producer")
	fresh, _ := kgo.NewClient(kgo.SeedBrokers(env.boot), kgo.SASL(plainAuth("acme-orders-producer", env.keys["acme-orders-producer"])), kgo.RequestRetries(0))
	defer fresh.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	if err := fresh.Ping(pctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("reconnection with the removed key: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	produceN(t, other, "orders", 2, "globex-after") // another key goes on
}

// S1: a reload that changes a start-only key is refused whole; the old configuration stays.
func TestReloadStartOnlyRefused(t *testing.T) {
	env := newTestEnv(t, "")
	path := filepath.Join(env.dir, "flexway.yaml")
	b, _ := os.ReadFile(path)
	s := strings.Replace(string(b), "    plaintext:\n", "    max_total_in_flight_bytes: 2GiB\n    idle_timeout: 1s\n    plaintext:\n", 1)
	must(t, os.WriteFile(path, []byte(s), 0o600))
	snap, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	old := env.e.Snapshot()
	err = env.e.Reload(context.Background(), snap)
	if !errors.Is(err, configs.ErrStartOnly) || !strings.Contains(err.Error(), "max_total_in_flight_bytes") {
		t.Fatalf("reload: %v, want a start-only refusal naming max_total_in_flight_bytes", err)
	}
	if env.e.Snapshot() != old {
		t.Fatal("the refused configuration was put in force")
	}
}

// S1: bounds apply at the next request after a reload.
func TestReloadAppliesBounds(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	path := filepath.Join(env.dir, "flexway.yaml")
	b, _ := os.ReadFile(path)
	s := strings.Replace(string(b), "    plaintext:\n", "    max_request_bytes: 64KiB\n    plaintext:\n", 1)
	must(t, os.WriteFile(path, []byte(s), 0o600))
	snap, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.e.Reload(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	r.send(md) // adopts the new bounds
	var mdr kmsg.MetadataResponse
	mdr.Version = 4
	r.recv(&mdr)
	big := make([]byte, 4)
	big[1] = 2 // 128 KiB frame: over the new 64 KiB bound
	time.Sleep(100 * time.Millisecond)
	r.writeRaw(big)
	r.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "request larger than max_request_bytes")
}

// S2: a token is verified again on every reload by the issuers in force:
// a key the issuer withdrew closes the session at its next request.
func TestReloadRevokesWithdrawnToken(t *testing.T) {
	oe := newOAuthEnv(t)
	tok := oe.token(nil)
	prod := oe.tokenClient(tok, kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(4*time.Second))
	produceN(t, prod, "orders", 2, "before")
	oe.issuer.Withdraw("gw-1")
	snap, err := configs.Load(filepath.Join(oe.dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := oe.e.Reload(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr(); err == nil {
		t.Fatal("a produce with the withdrawn token succeeded")
	}
	line := oe.waitLog(5*time.Second, "credential revoked on reload", "token no longer accepted")
	if strings.Contains(line, tok) {
		t.Fatal("the log shows the token")
	}
}
