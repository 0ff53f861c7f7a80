package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// seedLogLines are the log lines the seeds name (001 "Dépannage" and
// "Bornes de l'écouteur", 002 "Troubleshooting", 000; SPEC O2), word for
// word, at the seed's level (WARN where the seed names none: a refusal the
// operator acts on), with what each must carry. pending: the feature is
// built by another branch of this session; its row turns into a trigger
// here when it lands.
var seedLogLines = []struct {
	msg, level string
	attrs      []string // keys the line must hold
	pending    string
}{
	{msg: "kafka authentication refused", level: "WARN", attrs: []string{"cause", "user", "cluster", "mechanism"}},
	{msg: "kafka connection refused", level: "WARN", attrs: []string{"cause"}},
	{msg: "kafka connection closed: the tenant's in-flight share is reached", level: "WARN", attrs: []string{"tenant", "max_tenant_in_flight_bytes"}},
	{msg: "kafka produce refused: the tenant's quota is spent", level: "WARN", attrs: []string{"tenant", "window"},
		pending: "Q3, the day/month quota of Produce: not built on this branch (the quota helper builds it)"},
	{msg: "kafka connection refused: two upstreams reach the same physical cluster", level: "ERROR",
		pending: "U3, the cluster id read from each upstream: not built on this branch (the drain helper builds it)"},
}

// sendUnauthenticated opens a connection to addr and sends a Metadata
// request before any authentication: refused ("request before
// authentication"), the connection closed.
func sendUnauthenticated(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
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
		t.Fatal(err)
	}
	var one [1]byte
	_, _ = c.Read(one[:]) // until the gateway closes
}

// O2: each log line of the seeds the gateway emits is found word for word
// (its msg), at its level, with its cause; no line holds a secret (the
// keys, the wrong password a client tried).
func TestSeedLogLines(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "    max_in_flight_bytes: 1MiB\n    max_response_bytes: 2MiB\n    max_tenant_in_flight_bytes: 2MiB\n    on_tenant_budget_exceeded: close\n",
		WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// kafka authentication refused: a wrong key.
	const wrong = "wrong-secret-value-0042"
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

	for _, s := range seedLogLines {
		t.Run(s.msg, func(t *testing.T) {
			if s.pending != "" {
				t.Skip("pending: " + s.pending)
			}
			var found map[string]any
			deadline := time.Now().Add(15 * time.Second)
			for found == nil && time.Now().Before(deadline) {
				for _, l := range logs.all() {
					var m map[string]any
					if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == s.msg {
						found = m
						break
					}
				}
				if found == nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
			if found == nil {
				t.Fatalf("no line %q", s.msg)
			}
			if found["level"] != s.level {
				t.Errorf("%q at level %v, want %s", s.msg, found["level"], s.level)
			}
			for _, k := range s.attrs {
				if v, ok := found[k]; !ok || v == "" {
					t.Errorf("%q without %s: %v", s.msg, k, found)
				}
			}
		})
	}
	secrets := []string{wrong}
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
