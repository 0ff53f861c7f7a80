package signals

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// Every closure logs and counts from one table: the metric's cause label
// is one of the normal closures seed 001 names, never a refusal.
func TestCloseCausesTable(t *testing.T) {
	labels := map[string]bool{"auth_timeout": true, "idle_timeout": true, "max_session_lifetime": true}
	seen := map[string]bool{}
	for why := CloseCause(0); why < numCloseCauses; why++ {
		c := closeCauses[why]
		if c.name == "" || seen[c.name] {
			t.Errorf("cause %d: name %q missing or taken twice", why, c.name)
		}
		seen[c.name] = true
		if c.metric != "" && !labels[c.metric] {
			t.Errorf("%v: counted as %q, not a normal closure", why, c.metric)
		}
		if c.refused && (c.metric != "" || (c.cause == "") == !c.callCause) {
			t.Errorf("%v: a refusal is counted as a closure or logs no cause", why)
		}
	}
}

func TestClosingLogsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	refused := NewRateLimiter(RefusalsPerSecond)
	m := New(nil)
	acme := m.Tenant("main", "acme")
	m.Closing(log, refused, ClosePartialFrame, acme, []any{"cluster", "main", "tenant", "acme"})
	m.Closing(log, refused, CloseIdle, acme, nil)
	if n := m.ClosedBy(CloseIdle); n != 2 {
		t.Fatalf("idle_timeout counted %d times, want 2", n)
	}
	if !strings.Contains(buf.String(), `level=WARN msg="kafka connection closed: a request not completed within idle_timeout" cluster=main tenant=acme`) {
		t.Fatalf("log: %s", buf.String())
	}
	buf.Reset()
	m.Closing(log, refused, CloseTLSOnPlaintext, nil, []any{"cluster", "main"})
	if !strings.Contains(buf.String(), `msg="kafka connection refused" cause="a TLS client on a plaintext port" cluster=main`) {
		t.Fatalf("log: %s", buf.String())
	}
	if n := m.ClosedBy(CloseSessionEnded); n != 0 {
		t.Fatalf("max_session_lifetime counted %d", n)
	}
	var out bytes.Buffer
	m.Metrics().WritePrometheus(&out)
	if !strings.Contains(out.String(), `flexway_kafka_connections_closed_total{cause="idle_timeout",tenant="acme"} 2`) {
		t.Fatalf("metrics:\n%s", out.String())
	}
}
