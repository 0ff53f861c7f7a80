package configs

import (
	"strings"
	"testing"
)

// TestQuotasLoad: listeners.kafka.quotas as seed 001 writes it ("Quotas :
// l'étranglement de KIP-219"; SPEC Q1): the rates per principal and per
// tenant in sizes, window and max_throttle, the rest unbounded.
func TestQuotasLoad(t *testing.T) {
	s, errs := base().apply(t, edit{"flexway", "  kafka:\n", `  kafka:
    quotas:
      client: { producer_byte_rate: 1MiB, consumer_byte_rate: 4MiB, request_rate: 200 }
      tenant: { producer_byte_rate: 10MiB, consumer_byte_rate: 40MiB }
      window: 2s
      max_throttle: 5s
`}).load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	q := s.Listener.Quotas
	if q == nil || q.Client == nil || q.Tenant == nil {
		t.Fatalf("quotas = %+v", q)
	}
	if *q.Client != (Rates{1 << 20, 4 << 20, 200}) || *q.Tenant != (Rates{10 << 20, 40 << 20, 0}) {
		t.Errorf("client %+v tenant %+v", *q.Client, *q.Tenant)
	}
	if q.Window.String() != "2s" || q.MaxThrottle.String() != "5s" || q.Quota != "" {
		t.Errorf("window %s max_throttle %s quota %q", q.Window, q.MaxThrottle, q.Quota)
	}
}

// TestQuotasErrorsAtOnce: every wrong quota key is reported in one load,
// each with its file and line (SPEC C3, Q1).
func TestQuotasErrorsAtOnce(t *testing.T) {
	_, errs := base().apply(t, edit{"flexway", "  kafka:\n", `  kafka:
    quotas:
      client: { producer_byte_rate: -1MiB, request_rate: -5 }
      tenant: { consumer_byte_rate: lots }
      window: 20s
      max_throttle: 50ms
`}).load(t)
	for _, want := range []string{
		"flexway.yaml:20: listeners.kafka.quotas.client.producer_byte_rate:",
		"flexway.yaml:20: listeners.kafka.quotas.client.request_rate: -5 is negative",
		"flexway.yaml:21: listeners.kafka.quotas.tenant.consumer_byte_rate:",
		"flexway.yaml:22: listeners.kafka.quotas.window: 20s is outside 100ms..10s",
		"flexway.yaml:23: listeners.kafka.quotas.max_throttle: 50ms is outside 100ms..30s",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("report lacks %q:\n%s", want, errs)
		}
	}
}

// TestQuotasReloadable: every quota key may change at a reload (seed 001:
// "Toutes ces clés sont rechargeables"): none is start-only.
func TestQuotasReloadable(t *testing.T) {
	old, errs := base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    quotas: { client: { producer_byte_rate: 1MiB } }\n"}).load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	next, errs := base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    quotas:\n      client: { producer_byte_rate: 100KiB, request_rate: 10 }\n      tenant: { consumer_byte_rate: 1MiB }\n      window: 500ms\n      max_throttle: 2s\n"}).load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	if d := next.StartOnlyDiff(old); len(d) != 0 {
		t.Errorf("start-only: %q", d)
	}
	none, _ := base().load(t)
	if d := none.StartOnlyDiff(old); len(d) != 0 {
		t.Errorf("removing quotas is start-only: %q", d)
	}
}
