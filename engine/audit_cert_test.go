package engine

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// O3 (issue 34.6): a client certificate refused is audited under the
// operation "certificate", never SaslAuthenticate (mTLS sends no SASL
// request): one not declared in auth.mtls.clients (anonymous: no tenant),
// and a declared one past its tenant's max_connections_per_tenant (its
// tenant and principal named); each once, code authentication.
func TestAuditCertificateRefusals(t *testing.T) {
	logs := &jsonLines{}
	te := newTLSEnv(t, "    max_connections_per_tenant: 1\n", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, te.testEnv, "refusals")
	dial := func(name string) net.Conn {
		cert := te.client[name]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := te.dialer(&cert, 0, 0)(ctx, "tcp", te.boot)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	held := dial("billing") // acme's one connection, authenticated at its handshake
	waitUntil(t, 10*time.Second, "acme's connection counted", func() bool {
		return strings.Contains(metricsText(t, te.e), `flexway_kafka_connections{cluster="shop",tenant="acme",mechanism="mtls"} 1`)
	})
	for _, name := range []string{"billing", "undeclared"} {
		c := dial(name)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("a %s certificate past the bound: not closed (%v)", name, err)
		}
	}
	_ = held
	waitUntil(t, 20*time.Second, "two certificate refusals audited", func() bool {
		n := 0
		for _, a := range logs.audits(t) {
			if a.Operation == "certificate" {
				n++
			}
		}
		return n >= 2
	})
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	must(t, te.e.Stop(sctx))
	var bound, unknown int
	for _, a := range logs.audits(t) {
		if a.Operation == "SaslAuthenticate" {
			t.Errorf("an mTLS refusal audited as SaslAuthenticate: %+v", a)
		}
		if a.Operation != "certificate" {
			continue
		}
		if a.Code != "authentication" || a.Decision != "refused" || a.Host != "shop" {
			t.Errorf("certificate line %+v, want refused, authentication, host shop", a)
		}
		switch a.Tenant {
		case "acme":
			bound++
		case "":
			unknown++
		default:
			t.Errorf("certificate line names tenant %q", a.Tenant)
		}
	}
	if bound < 1 || unknown < 1 {
		t.Errorf("certificate refusals audited: %d past the tenant's bound, %d undeclared; want one each at least; lines %+v", bound, unknown, logs.audits(t))
	}
}
