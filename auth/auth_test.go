package auth

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
)

// keySnap is a snapshot with two API keys and two declared certificates.
func keySnap(now time.Time) *configs.Snapshot {
	return &configs.Snapshot{
		Keys: map[string]*configs.APIKey{
			"acme-app": {ID: "acme-app", Hash: configs.HashKey("acme-secret"), Tenant: "acme", Operations: []string{"produceOrders", "consumeOrders"}, ExpiresAt: now.Add(time.Hour)},
			"acme-old": {ID: "acme-old", Hash: configs.HashKey("old-secret"), Tenant: "acme", Operations: []string{"consumeOrders"}, ExpiresAt: now.Add(-time.Minute)},
		},
		Clients: []*configs.MTLSClient{
			{ID: "billing", Subject: "CN=billing-app", Tenant: "acme", Operations: []string{"consumeOrders"}},
			{ID: "ledger", Subject: "CN=ledger,O=Globex,C=FR", Tenant: "globex", Operations: []string{"produceOrders"}},
		},
	}
}

func plain(authz, user, pass string) []byte { return []byte(authz + "\x00" + user + "\x00" + pass) }

// I1: a key is its id and its secret, until its expiry; every refusal has
// its cause and never the secret.
func TestVerifyPlain(t *testing.T) {
	now := time.Now()
	snap := keySnap(now)
	res := VerifyPlain(snap, plain("", "acme-app", "acme-secret"), now)
	id := res.ID
	if id == nil {
		t.Fatalf("a valid key refused: %s", res.Cause)
	}
	if id.Principal != "acme-app" || id.Mechanism != configs.MechAPIKey || id.Tenant != "acme" || res.User != "acme-app" ||
		!reflect.DeepEqual(id.Ops, []string{"produceOrders", "consumeOrders"}) || !id.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("identity %+v", *id)
	}
	if res := VerifyPlain(snap, plain("acme-app", "acme-app", "acme-secret"), now); res.ID == nil {
		t.Fatalf("authzid equal to the user refused: %s", res.Cause)
	}
	for _, c := range []struct {
		name  string
		msg   []byte
		cause string
	}{
		{"unknown id", plain("", "nobody", "acme-secret"), "unknown key"},
		{"wrong secret", plain("", "acme-app", "not-the-secret"), "key mismatch"},
		{"expired", plain("", "acme-old", "old-secret"), "expired key"},
		{"another authzid", plain("globex-app", "acme-app", "acme-secret"), "authorization id differs"},
		{"one NUL", []byte("acme-app\x00acme-secret"), "malformed PLAIN message"},
		{"empty", nil, "malformed PLAIN message"},
	} {
		res := VerifyPlain(snap, c.msg, now)
		if res.ID != nil || !strings.Contains(res.Cause, c.cause) {
			t.Fatalf("%s: %+v, want refused with %q", c.name, res, c.cause)
		}
		if strings.Contains(res.Cause+res.User, "secret") {
			t.Fatalf("%s: the verdict shows the secret: %+v", c.name, res)
		}
	}
	// The key's expiry is the caller's now.
	if res := VerifyPlain(snap, plain("", "acme-app", "acme-secret"), now.Add(time.Hour)); res.ID != nil {
		t.Fatal("a key at its expires_at admitted")
	}
}

// I3: a certificate is found by its whole subject or by its common name;
// the identity ends with the certificate.
func TestMatchCert(t *testing.T) {
	snap := keySnap(time.Now())
	notAfter := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	cert := func(name pkix.Name) *x509.Certificate { return &x509.Certificate{Subject: name, NotAfter: notAfter} }

	res := MatchCert(snap, cert(pkix.Name{CommonName: "billing-app", Organization: []string{"Acme"}}))
	if res.ID == nil {
		t.Fatalf("CN=billing-app refused: %s", res.Cause)
	}
	if id := res.ID; id.Principal != "billing" || id.Mechanism != configs.MechMTLS || id.Tenant != "acme" || res.User != "billing" ||
		!reflect.DeepEqual(id.Ops, []string{"consumeOrders"}) || !id.Expires.Equal(notAfter) {
		t.Fatalf("identity %+v", *id)
	}
	if res := MatchCert(snap, cert(pkix.Name{CommonName: "ledger", Organization: []string{"Globex"}, Country: []string{"FR"}})); res.ID == nil || res.ID.Principal != "ledger" {
		t.Fatalf("the whole subject: %+v", res)
	}
	for _, name := range []pkix.Name{
		{CommonName: "stranger"},
		{CommonName: "ledger"},                                  // the declared subject is the whole one
		{CommonName: "ledger", Organization: []string{"Other"}}, // another organization
	} {
		if res := MatchCert(snap, cert(name)); res.ID != nil || res.Cause != "certificate not declared in auth.mtls.clients" {
			t.Fatalf("%s: %+v, want refused", name, res)
		}
	}
}

// S2: an API key or a certificate stands after a reload while the store
// and auth.mtls.clients say the same of it; anything else revokes it.
func TestRevocation(t *testing.T) {
	now := time.Now()
	key := VerifyPlain(keySnap(now), plain("", "acme-app", "acme-secret"), now).ID
	cert := MatchCert(keySnap(now), &x509.Certificate{Subject: pkix.Name{CommonName: "billing-app"}, NotAfter: now.Add(time.Hour)}).ID
	if key == nil || cert == nil {
		t.Fatal("no identity to revoke")
	}
	cases := []struct {
		name  string
		id    *Identity
		edit  func(s *configs.Snapshot)
		cause string
	}{
		{"key unchanged", key, func(s *configs.Snapshot) {}, ""},
		{"key's operations reordered", key, func(s *configs.Snapshot) {
			s.Keys["acme-app"].Operations = []string{"consumeOrders", "produceOrders", "consumeOrders"}
		}, ""},
		{"another key removed", key, func(s *configs.Snapshot) { delete(s.Keys, "acme-old") }, ""},
		{"key removed", key, func(s *configs.Snapshot) { delete(s.Keys, "acme-app") }, "key removed from the store"},
		{"key replaced", key, func(s *configs.Snapshot) { s.Keys["acme-app"].Hash = configs.HashKey("new-secret") }, "key replaced in the store"},
		{"key's tenant", key, func(s *configs.Snapshot) { s.Keys["acme-app"].Tenant = "globex" }, "key bound to another tenant"},
		{"key's operations", key, func(s *configs.Snapshot) { s.Keys["acme-app"].Operations = []string{"produceOrders"} }, "key bound to other operations"},
		{"key's expiry", key, func(s *configs.Snapshot) { s.Keys["acme-app"].ExpiresAt = now.Add(2 * time.Hour) }, "key's expiry changed"},
		{"certificate unchanged", cert, func(s *configs.Snapshot) {}, ""},
		{"certificate's subject", cert, func(s *configs.Snapshot) { s.Clients[0].Subject = "CN=billing-app-2" }, "certificate rebound"},
		{"certificate's tenant", cert, func(s *configs.Snapshot) { s.Clients[0].Tenant = "globex" }, "certificate rebound"},
		{"certificate's operations", cert, func(s *configs.Snapshot) { s.Clients[0].Operations = nil }, "certificate rebound"},
		{"certificate removed", cert, func(s *configs.Snapshot) { s.Clients = s.Clients[1:] }, "certificate removed from auth.mtls.clients"},
	}
	for _, c := range cases {
		snap := keySnap(now)
		c.edit(snap)
		if got := Revocation(c.id, snap); got != c.cause {
			t.Fatalf("%s: revocation %q, want %q", c.name, got, c.cause)
		}
	}
}
