// An example's configuration for TestExamples: rewritten for a test
// machine (free ports, the test issuer), then read back as the listeners
// and identities it serves and checked against its case.

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

var (
	yamlLine   = regexp.MustCompile(`^(\s*)(- )?([A-Za-z_][A-Za-z0-9_-]*):`)
	addrPort   = regexp.MustCompile(`(address:\s*"?[^"\s#]*:)(\d+)`)
	advPort    = regexp.MustCompile(`(advertised_port:\s*)(\d+)`)
	portRange  = regexp.MustCompile(`from:\s*(\d+),\s*to:\s*(\d+)`)
	discovery  = regexp.MustCompile(`(discovery:\s*)("?[^"\s#]+"?)`)
	ownIndent  = regexp.MustCompile(`^\s*(- )?`)
	commentOut = regexp.MustCompile(`^\s*(#|$)`)
)

// forTestMachine rewrites what must differ on a test machine, and only
// that, line by line (comments and every other key stay as written):
//   - listeners.kafka.address and advertised_port: a free port, since the
//     example's 9093 may be taken on the machine (ports["tls"]);
//   - each plaintext.clusters range (ports: { from, to }): as many
//     consecutive free ports, for the same reason (ports["plaintext"]);
//   - server.admin.address: a free port (ports["admin"]);
//   - auth.issuers[].discovery: the test issuer's URL, with a ca_file
//     line for its CA (the example's issuer is a production one, out of
//     reach here; the test issuer's certificate is signed by a CA nobody
//     trusts by default). An issuer's own ca_file line is dropped.
func forTestMachine(t *testing.T, cfg string, issuer *testkit.Issuer, ports map[string]int) string {
	t.Helper()
	type key struct {
		indent int
		name   string
	}
	var stack []key
	var out []string
	for _, line := range strings.Split(cfg, "\n") {
		m := yamlLine.FindStringSubmatch(line)
		if m == nil || commentOut.MatchString(line) {
			out = append(out, line)
			continue
		}
		indent := len(m[1]) + len(m[2])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, key{indent, m[3]})
		names := make([]string, len(stack))
		for i, k := range stack {
			names[i] = k.name
		}
		path := strings.Join(names, ".")
		port := func(name string) string {
			if _, ok := ports[name]; !ok {
				ports[name] = testkit.FreePort(t)
			}
			return strconv.Itoa(ports[name])
		}
		switch {
		case path == "listeners.kafka.address":
			line = addrPort.ReplaceAllString(line, "${1}"+port("tls"))
		case path == "listeners.kafka.advertised_port":
			line = advPort.ReplaceAllString(line, "${1}"+port("tls"))
		case path == "server.admin.address":
			line = addrPort.ReplaceAllString(line, "${1}"+port("admin"))
		case strings.HasPrefix(path, "listeners.kafka.plaintext.clusters."):
			line = portRange.ReplaceAllStringFunc(line, func(s string) string {
				r := portRange.FindStringSubmatch(s)
				from, _ := strconv.Atoi(r[1])
				to, _ := strconv.Atoi(r[2])
				base := testkit.FreePorts(t, to-from+1)
				if _, ok := ports["plaintext"]; !ok {
					ports["plaintext"] = base
				}
				return fmt.Sprintf("from: %d, to: %d", base, base+to-from)
			})
		case path == "auth.issuers.ca_file":
			continue
		case path == "auth.issuers.discovery":
			line = discovery.ReplaceAllString(line, "${1}"+issuer.Discovery())
			line += "\n" + strings.Repeat(" ", len(ownIndent.FindString(line))) + "ca_file: " + issuer.CAFile
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// example is what a loaded example serves: its listeners and identities.
type example struct {
	snap       *configs.Snapshot
	listeners  []string          // "tls", "plaintext"
	seeds      map[string]string // the bootstrap address of each listener, as the example announces it
	ids        []*identity
	kinds      []string
	admin      bool
	adminToken string
	caFile     string
}

// identity is one of the example's identities of the tenant acme.
type identity struct {
	kind, name    string
	send, receive bool // on orders
	mech          sasl.Mechanism
	cert          *tls.Certificate
}

// describeExample reads a loaded example as the listeners it serves, the
// bootstrap address of each, and its identities of tenant acme on orders.
func describeExample(t *testing.T, snap *configs.Snapshot, dir string, issuer *testkit.Issuer) *example {
	t.Helper()
	ex := &example{snap: snap, seeds: map[string]string{}, caFile: filepath.Join(dir, "tls", "ca.crt")}
	l := snap.Listener
	if l.TLS != nil {
		ex.listeners = append(ex.listeners, "tls")
		ex.seeds["tls"] = fmt.Sprintf("bootstrap.shop.%s:%d", l.SNIDomain, l.AdvertisedPort)
	}
	if p := l.Plaintext; p != nil && p.Clusters["shop"] != nil {
		ex.listeners = append(ex.listeners, "plaintext")
		ex.seeds["plaintext"] = fmt.Sprintf("%s:%d", p.AdvertisedHost, p.Clusters["shop"].Ports.From)
	}
	var ops []*configs.Operation
	for _, op := range snap.Operations {
		if op.Cluster == "shop" && op.Channel == exampleTopic {
			ops = append(ops, op)
		}
	}
	ex.keyIdentities(ops)
	ex.tokenIdentity(t, ops, issuer)
	ex.certIdentities(t, ops, dir)
	for _, kind := range []string{kindKey, kindToken, kindCert} {
		if slices.ContainsFunc(ex.ids, func(id *identity) bool { return id.kind == kind }) {
			ex.kinds = append(ex.kinds, kind)
		}
	}
	return ex
}

// opensOn: whether the operations ops (those on orders) let an identity
// send and receive, counting those it is bound to (bound nil: any) whose
// security admits it.
func opensOn(ops []*configs.Operation, bound []string, admits func(*configs.Operation) bool) (send, receive bool) {
	for _, op := range ops {
		if (bound == nil || slices.Contains(bound, op.ID)) && admits(op) {
			send = send || op.Action == "send"
			receive = receive || op.Action == "receive"
		}
	}
	return send, receive
}

// keyIdentities: API keys with a demo key beside the store.
func (ex *example) keyIdentities(ops []*configs.Operation) {
	snap := ex.snap
	ids := make([]string, 0, len(snap.Keys))
	for id := range snap.Keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		k := snap.Keys[id]
		b, err := os.ReadFile(filepath.Join(filepath.Dir(snap.KeyStorePath), id+".key"))
		if k.Tenant != exampleTenant || err != nil || (!k.ExpiresAt.IsZero() && k.ExpiresAt.Before(time.Now())) {
			continue
		}
		s, r := opensOn(ops, k.Operations, func(op *configs.Operation) bool { return op.Plain })
		ex.ids = append(ex.ids, &identity{kind: kindKey, name: id, send: s, receive: r,
			mech: plain.Auth{User: id, Pass: strings.TrimSpace(string(b))}.AsMechanism()})
	}
}

// tokenIdentity: a token of the example's issuer, carrying the scopes of
// the operations on orders; and, when one of them has an admin_scope, a
// token carrying it too.
func (ex *example) tokenIdentity(t *testing.T, ops []*configs.Operation, issuer *testkit.Issuer) {
	t.Helper()
	iss := ex.snap.File.Auth.Issuers
	if len(iss) == 0 {
		return
	}
	if len(iss) != 1 {
		t.Fatalf("%d issuers: the test stands in for one", len(iss))
	}
	var scopes []string
	for _, op := range ops {
		if len(op.OAuthScopes) > 0 {
			scopes = append(scopes, op.OAuthScopes[0]...)
		}
	}
	claims := func(extra ...string) map[string]any {
		return map[string]any{"sub": "orders-app", "aud": iss[0].Audience, iss[0].TenantClaim: exampleTenant,
			"scope": strings.Join(append(slices.Clone(scopes), extra...), " ")}
	}
	s, r := opensOn(ops, nil, func(op *configs.Operation) bool { return len(op.OAuthScopes) > 0 })
	tok := issuer.Token(t, claims())
	ex.ids = append(ex.ids, &identity{kind: kindToken, name: "token", send: s, receive: r,
		mech: oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: tok}, nil })})
	for _, op := range ops {
		if op.AdminScope != "" && len(op.OAuthScopes) > 0 {
			ex.admin = true
			ex.adminToken = issuer.Token(t, claims(op.AdminScope))
		}
	}
}

// certIdentities: client certificates, made by make-demo-certs.sh.
func (ex *example) certIdentities(t *testing.T, ops []*configs.Operation, dir string) {
	t.Helper()
	for _, c := range ex.snap.Clients {
		if c.Tenant != exampleTenant {
			continue
		}
		cert := testkit.LoadKeyPair(t, filepath.Join(dir, "tls", c.ID+".crt"), filepath.Join(dir, "tls", c.ID+".key"))
		s, r := opensOn(ops, c.Operations, func(op *configs.Operation) bool { return op.X509 })
		ex.ids = append(ex.ids, &identity{kind: kindCert, name: c.ID, send: s, receive: r, cert: &cert})
	}
}

// checkAgainst fails if the example serves other listeners or identities
// than its case says, or if a port was left as written.
func (ex *example) checkAgainst(t *testing.T, want exampleCase, ports map[string]int) {
	t.Helper()
	if !slices.Equal(ex.listeners, want.listeners) || !slices.Equal(ex.kinds, want.kinds) || ex.admin != want.admin {
		t.Fatalf("the example serves listeners %v to %v (administration %v); its case says %v to %v (%v)",
			ex.listeners, ex.kinds, ex.admin, want.listeners, want.kinds, want.admin)
	}
	l := ex.snap.Listener
	if l.TLS != nil && l.AdvertisedPort != ports["tls"] {
		t.Fatalf("the TLS listener announces port %d, not the test's %d", l.AdvertisedPort, ports["tls"])
	}
	if p := l.Plaintext; p != nil && p.Clusters["shop"].Ports.From != ports["plaintext"] {
		t.Fatalf("the plaintext range starts at %d, not the test's %d", p.Clusters["shop"].Ports.From, ports["plaintext"])
	}
	for _, id := range ex.ids {
		if !id.send && !id.receive {
			t.Fatalf("%s %s opens nothing on %s: no operation it is bound to admits its mechanism", id.kind, id.name, exampleTopic)
		}
	}
	for _, l := range ex.listeners {
		if ex.sender(l) == nil || ex.receiver(l) == nil {
			t.Fatalf("listener %s: no identity of tenant %s both produces and consumes %s", l, exampleTenant, exampleTopic)
		}
	}
}
