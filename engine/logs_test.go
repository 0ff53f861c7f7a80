package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// seedLogLines are the log lines the seeds name (001 "Dépannage" and
// "Bornes de l'écouteur", 002 "Troubleshooting", 000; SPEC O2), word for
// word, at the seed's level (WARN where the seed names none: a refusal the
// operator acts on), with what each must carry: a key and its value ("":
// any value but empty). TestSeedLogLines triggers each one.
var seedLogLines = []struct {
	msg, level string
	attrs      map[string]string
}{
	{msg: "kafka authentication refused", level: "WARN",
		attrs: map[string]string{"cause": "", "user": "acme-app", "cluster": "shop", "mechanism": ""}},
	{msg: "kafka connection refused", level: "WARN", attrs: map[string]string{"cause": ""}},
	{msg: "kafka connection closed: the tenant's in-flight share is reached", level: "WARN",
		attrs: map[string]string{"tenant": "acme", "max_tenant_in_flight_bytes": ""}},
	// Q3: the tenant's day budget of Produce spent (globex's, not acme's).
	{msg: "kafka produce refused: the tenant's quota is spent", level: "WARN",
		attrs: map[string]string{"tenant": "globex", "window": "day", "policy": "plans", "cluster": "shop"}},
	// U3: a connection to cluster bank, on upstream b, which reaches the
	// physical cluster of upstream a under another prefix.
	{msg: "kafka connection refused: two upstreams reach the same physical cluster", level: "ERROR",
		attrs: map[string]string{"cluster": "bank", "upstream": "b", "same_as": "a"}},
}

// sendUnauthenticated opens a connection to addr and sends a Metadata
// request before any authentication: refused ("request before
// authentication"), the connection closed. A connection the gateway
// refuses at once (closed at accept) may fail at connect, at the write or
// at the first read: each is the refusal, which the caller finds in the log.
func sendUnauthenticated(t *testing.T, addr string) {
	t.Helper()
	refused := func(err error) bool {
		return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if refused(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.Version, 1, []byte("probe"), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(b); err != nil {
		if refused(err) {
			return
		}
		t.Fatal(err)
	}
	var one [1]byte
	_, _ = c.Read(one[:]) // until the gateway closes
}

// O2: each log line of the seeds the gateway emits is found word for word
// (its msg), at its level, with what it must carry; no line holds a secret
// (the keys, the wrong password a client tried). Two gateways write to one
// log: the test's env (with a day budget of Produce, its counts in a local
// store) and one whose two upstreams reach one physical cluster (U3).
func TestSeedLogLines(t *testing.T) {
	logs := &jsonLines{}
	logger := WithLogger(slog.New(slog.NewJSONHandler(logs, nil)))
	store := counters.NewLocal()
	defer store.Close()
	const budget = 1_000_000
	env := newTestEnvWith(t, envConfig{
		listenerExtra: "    max_in_flight_bytes: 1MiB\n    max_response_bytes: 2MiB\n    max_tenant_in_flight_bytes: 2MiB\n    on_tenant_budget_exceeded: close\n" +
			"    quotas: { quota: plans }\n",
		// The store is the test's (WithCounters): the URL is never dialed.
		extra: "server:\n  counters: { store: \"redis://127.0.0.1:1/0\", sync: 100ms }\n" +
			fmt.Sprintf("policies:\n  definitions:\n    plans: { type: quota, config: { limits: { day: %d } } }\n", budget),
	}, logger, WithCounters(store))
	sameAddr := kfakeCluster(t, "physical-1", "acme.orders", "b.acme.ledger")
	_, samePort, _ := net.SplitHostPort(sameAddr)
	sameEnv, _, bank := twoUpstreams(t, "127.0.0.1:"+samePort, "localhost:"+samePort, logger)
	sameKey := sameEnv.keys["acme-app"]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const wrong = "wrong-secret-value-0042"
	triggerSeedLines(t, ctx, env, wrong, store, budget, bank)
	for _, s := range seedLogLines {
		t.Run(s.msg, func(t *testing.T) { waitSeedLine(t, logs, s.msg, s.level, s.attrs) })
	}
	secrets := []string{wrong, sameKey}
	for _, k := range env.keys {
		secrets = append(secrets, k)
	}
	for _, l := range logs.all() {
		for _, s := range secrets {
			if strings.Contains(l, s) {
				t.Errorf("a log line holds a secret: %s", l)
			}
		}
	}
}

// triggerSeedLines has env log each of its seed lines: an authentication
// refused (the key wrong), a request before authentication, a tenant's
// in-flight share reached, globex's day budget (of the policy plans,
// counted in store) spent; and has the gateway of bank (its two upstreams
// on one physical cluster) refuse a connection.
func triggerSeedLines(t *testing.T, ctx context.Context, env *testEnv, wrong string, store quota.Store, budget int64, bank string) {
	// kafka authentication refused: a wrong key.
	bad, err := kgo.NewClient(kgo.SeedBrokers(env.boot), kgo.SASL(plain.Auth{User: "acme-app", Pass: wrong}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	must(t, err)
	defer bad.Close()
	if bad.Ping(ctx) == nil {
		t.Fatal("a wrong key authenticated")
	}
	// kafka connection refused: a request before authentication.
	sendUnauthenticated(t, env.boot)
	// kafka connection closed: the tenant's in-flight share is reached.
	fillOrders(t, env, 40)
	addr := leaderOf0(t, env)
	for i := 0; i < 4; i++ {
		stall(t, env, addr, 200)
	}
	// kafka produce refused: the tenant's quota is spent: globex spent its
	// day (acme's budget, which fillOrders draws on, is its own).
	store.Counter("plans:globex", quota.Day).Add(time.Now(), budget)
	prod := env.client("globex-app", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("g")}).FirstErr(); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("a Produce past the tenant's day budget: %v, want POLICY_VIOLATION", err)
	}
	// kafka connection refused: two upstreams reach the same physical
	// cluster: a connection to cluster bank is closed at accept.
	sendUnauthenticated(t, bank)
}

// waitSeedLine waits up to 15 s for a line of msg in logs at level holding
// attrs (seedLineHolds); failing, it shows the lines of msg it found.
func waitSeedLine(t *testing.T, logs *jsonLines, msg, level string, attrs map[string]string) {
	var seen []string // the lines of msg, none of them what is wanted
	deadline := time.Now().Add(15 * time.Second)
	for {
		seen = seen[:0]
		for _, l := range logs.all() {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != msg {
				continue
			}
			if seedLineHolds(m, level, attrs) {
				return
			}
			seen = append(seen, l)
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(seen) == 0 {
		t.Fatalf("no line %q", msg)
	}
	t.Fatalf("no line %q at level %s with %v; its lines:\n%s", msg, level, attrs, strings.Join(seen, "\n"))
}

// seedLineHolds reports whether the JSON line m is at level and holds each
// of attrs: the key, with its value ("": any value but empty).
func seedLineHolds(m map[string]any, level string, attrs map[string]string) bool {
	if m["level"] != level {
		return false
	}
	for k, want := range attrs {
		v, ok := m[k]
		if !ok || v == nil || v == "" || want != "" && fmt.Sprint(v) != want {
			return false
		}
	}
	return true
}

// O2: refusals before authentication write 10 lines a second at most;
// the next line written says how many were left out.
func TestRefusalLinesLimited(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	count := func() (n int, droppedSaid float64) {
		for _, l := range logs.all() {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "kafka connection refused" {
				n++
				if d, ok := m["lines_dropped"].(float64); ok {
					droppedSaid += d
				}
			}
		}
		return
	}
	const refusals = 60
	start := time.Now()
	for i := 0; i < refusals; i++ {
		sendUnauthenticated(t, env.boot)
	}
	elapsed := time.Since(start)
	n, _ := count()
	windows := int(elapsed/time.Second) + 2 // the one-second windows the storm touched
	if n == 0 || n > 10*windows || (10*windows < refusals && n >= refusals) {
		t.Fatalf("%d refusal lines for %d refusals over %d one-second windows", n, refusals, windows)
	}
	// One more refusal in a later second: its line counts those left out.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	sendUnauthenticated(t, env.boot)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n2, said := count()
		if n2 > n && (said > 0 || n >= refusals) {
			if n < refusals && int(said)+n2 != refusals+1 {
				t.Errorf("%d lines + %v said dropped, want %d refusals in all", n2, said, refusals+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line after the storm saying how many were left out (lines %d, said %v)", n2, said)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
