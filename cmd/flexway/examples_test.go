package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The examples, started as users start them (issue 13.2): the binary is
// built, then for each folder of configs/examples and for the quickstart
// (`make run`): certificates made by make-demo-certs.sh as the example's
// comment says, `flexway -check`, `flexway -config`, a franz-go client
// through each listener the example declares with each kind of identity
// it declares, one record produced and consumed back, the bounded
// administration where a token may administer, SIGHUP (the reload is
// logged, an open client still works), SIGTERM (exit status 0, no panic).

const examplesDir = "../../configs/examples"

// The identity kinds an example may declare.
const (
	kindKey   = "api key"     // auth.api_keys, SASL PLAIN
	kindToken = "token"       // auth.issuers, SASL OAUTHBEARER
	kindCert  = "certificate" // auth.mtls.clients, a client certificate
)

// exampleCase is what an example declares, written here so that an example
// that loses a listener or an identity fails rather than being tested on
// less; the test derives what it connects from the example itself and
// checks that it agrees.
type exampleCase struct {
	listeners []string // "tls", "plaintext"
	kinds     []string // identity kinds, in the order above
	admin     bool     // a token may carry an operation's admin_scope
}

var exampleCases = map[string]exampleCase{
	"quickstart":     {listeners: []string{"plaintext"}, kinds: []string{kindKey}},
	"tls-api-keys":   {listeners: []string{"tls"}, kinds: []string{kindKey}},
	"tls-oauth-mtls": {listeners: []string{"tls"}, kinds: []string{kindToken, kindCert}},
	"mesh-only":      {listeners: []string{"plaintext"}, kinds: []string{kindKey, kindToken}, admin: true},
	"tls-and-mesh":   {listeners: []string{"tls", "plaintext"}, kinds: []string{kindKey, kindCert}},
	"bounded-admin":  {listeners: []string{"tls"}, kinds: []string{kindKey, kindToken}, admin: true},
}

// The topic every example serves, and the tenant the test speaks for.
const (
	exampleTopic  = "orders"
	exampleTenant = "acme"
)

func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts it on every example")
	}
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]string{"quickstart": "../../configs/quickstart"}
	for _, e := range entries {
		if e.IsDir() {
			folders[e.Name()] = filepath.Join(examplesDir, e.Name())
		}
	}
	names := make([]string, 0, len(folders))
	for n := range folders {
		names = append(names, n)
		if _, ok := exampleCases[n]; !ok {
			t.Errorf("configs/examples/%s has no case in exampleCases (examples_test.go): add one saying its listeners and identities", n)
		}
	}
	for n := range exampleCases {
		if folders[n] == "" {
			t.Errorf("exampleCases names %s, which configs/examples does not hold", n)
		}
	}
	if t.Failed() {
		return
	}
	sort.Strings(names)
	bin := buildFlexway(t)
	script, err := filepath.Abs(filepath.Join(examplesDir, "make-demo-certs.sh"))
	if err != nil {
		t.Fatal(err)
	}
	issuer := testkit.NewIssuer(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			runExample(t, bin, script, issuer, name, folders[name], exampleCases[name])
		})
	}
}

// buildFlexway builds cmd/flexway as `make build` does.
func buildFlexway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flexway")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/flexway: %v\n%s", err, out)
	}
	return bin
}

func runExample(t *testing.T, bin, script string, issuer *testkit.Issuer, name, src string, want exampleCase) {
	start := time.Now()
	dir := filepath.Join(t.TempDir(), name)
	copyExample(t, src, dir)
	// The certificates, as the example's comment says: ../make-demo-certs.sh .
	if out, err := exec.Command("bash", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("make-demo-certs.sh: %v\n%s", err, out)
	}
	// flexway -check, from the example's folder: as written, then as rewritten.
	check := func(what string) {
		t.Helper()
		cmd := exec.Command(bin, "-check", "-config", "flexway.yaml")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "configuration valid") {
			t.Fatalf("flexway -check, %s: %v\n%s", what, err, out)
		}
	}
	check("the example as written")
	cfgPath := filepath.Join(dir, "flexway.yaml")
	orig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]int{}
	cfg := forTestMachine(t, string(orig), issuer, ports)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := configs.Load(cfgPath)
	if err != nil {
		t.Fatalf("the example, rewritten for the test machine, does not load: %v\n%s", err, cfg)
	}
	ex := describeExample(t, snap, dir, issuer)
	ex.checkAgainst(t, want, ports)

	check("rewritten for the test machine")
	gw := startFlexway(t, bin, dir)
	gw.waitLog(`"msg":"flexway started"`, 30*time.Second)
	if p, ok := ports["admin"]; ok {
		gw.waitHealthz(p)
	}

	if ex.admin {
		ex.administer(t, ex.listeners[0])
	}
	for _, l := range ex.listeners {
		ex.produceAndConsume(t, l, name)
	}

	// SIGHUP with a client open: the reload is logged, the client still works.
	l := ex.listeners[0]
	prod, cons := ex.sender(l), ex.receiver(l)
	cc := ex.client(t, l, cons, consumerOpts()...)
	defer cc.Close()
	pc := ex.client(t, l, prod)
	defer pc.Close()
	before := fmt.Sprintf("%s before SIGHUP", name)
	produce(t, pc, before)
	consumeUntil(t, cc, before)
	gw.signal(syscall.SIGHUP)
	gw.waitLog("configuration reloaded", 15*time.Second)
	after := fmt.Sprintf("%s after SIGHUP", name)
	produce(t, pc, after)
	consumeUntil(t, cc, after)

	// SIGTERM with the producer still connected (idle). The consumer is
	// closed first: a consumer keeps a Fetch in flight, and the engine's
	// drain waits for in-flight requests up to its 10 s bound.
	cc.Close()
	gw.stop()
	t.Logf("%s: started, served %v with %v, reloaded and stopped in %v", name, ex.listeners, ex.kinds, time.Since(start).Round(time.Millisecond))
}

// copyExample copies the example's files (not its folders: tls/ may hold a
// user's own certificates).
func copyExample(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

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
	opens := func(bound []string, admits func(*configs.Operation) bool) (send, receive bool) {
		for _, op := range ops {
			if (bound == nil || slices.Contains(bound, op.ID)) && admits(op) {
				send = send || op.Action == "send"
				receive = receive || op.Action == "receive"
			}
		}
		return send, receive
	}

	// API keys with a demo key beside the store.
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
		s, r := opens(k.Operations, func(op *configs.Operation) bool { return op.Plain })
		ex.ids = append(ex.ids, &identity{kind: kindKey, name: id, send: s, receive: r,
			mech: plain.Auth{User: id, Pass: strings.TrimSpace(string(b))}.AsMechanism()})
	}

	// A token of the example's issuer, carrying the scopes of the operations on orders.
	if iss := snap.File.Auth.Issuers; len(iss) > 0 {
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
		s, r := opens(nil, func(op *configs.Operation) bool { return len(op.OAuthScopes) > 0 })
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

	// Client certificates, made by make-demo-certs.sh.
	for _, c := range snap.Clients {
		if c.Tenant != exampleTenant {
			continue
		}
		cert := testkit.LoadKeyPair(t, filepath.Join(dir, "tls", c.ID+".crt"), filepath.Join(dir, "tls", c.ID+".key"))
		s, r := opens(c.Operations, func(op *configs.Operation) bool { return op.X509 })
		ex.ids = append(ex.ids, &identity{kind: kindCert, name: c.ID, send: s, receive: r, cert: &cert})
	}
	for _, kind := range []string{kindKey, kindToken, kindCert} {
		if slices.ContainsFunc(ex.ids, func(id *identity) bool { return id.kind == kind }) {
			ex.kinds = append(ex.kinds, kind)
		}
	}
	return ex
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

// usable: a certificate needs the TLS listener.
func (id *identity) usable(listener string) bool { return id.cert == nil || listener == "tls" }

func (ex *example) pick(listener, kind string, ok func(*identity) bool) *identity {
	for _, id := range ex.ids {
		if (kind == "" || id.kind == kind) && id.usable(listener) && ok(id) {
			return id
		}
	}
	return nil
}

// sender and receiver: the first identity usable on listener that produces
// (consumes) orders, preferring one that does both.
func (ex *example) sender(listener string) *identity {
	if id := ex.pick(listener, "", func(id *identity) bool { return id.send && id.receive }); id != nil {
		return id
	}
	return ex.pick(listener, "", func(id *identity) bool { return id.send })
}

func (ex *example) receiver(listener string) *identity {
	if id := ex.pick(listener, "", func(id *identity) bool { return id.send && id.receive }); id != nil {
		return id
	}
	return ex.pick(listener, "", func(id *identity) bool { return id.receive })
}

// client connects id through listener, as a user's client would: the
// bootstrap name the example announces (resolved to loopback), TLS with
// the SNI name and the demo CA, SASL or a client certificate.
func (ex *example) client(t *testing.T, listener string, id *identity, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var tc *tls.Config
	if listener == "tls" {
		tc = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: testkit.PoolFromFile(t, ex.caFile)}
		if id != nil && id.cert != nil {
			tc.Certificates = []tls.Certificate{*id.cert}
		}
	}
	base := []kgo.Opt{kgo.SeedBrokers(ex.seeds[listener]), kgo.Dialer(testkit.LoopbackDialer(tc)),
		kgo.ClientID("examples-test"), kgo.RetryTimeout(10 * time.Second)}
	if id != nil && id.mech != nil {
		base = append(base, kgo.SASL(id.mech))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// produceAndConsume: through listener, each kind of identity that may
// produce writes one record, then each kind that may consume reads back
// every record written. One client at a time: the listener's default
// max_connections_per_ip (16) holds for the test's single address.
func (ex *example) produceAndConsume(t *testing.T, listener, name string) {
	t.Helper()
	var values []string
	for _, kind := range ex.kinds {
		id := ex.pick(listener, kind, func(id *identity) bool { return id.send })
		if id == nil {
			continue
		}
		v := fmt.Sprintf("%s: %s through %s (%s)", name, kind, listener, id.name)
		cl := ex.client(t, listener, id)
		produce(t, cl, v)
		cl.Close()
		values = append(values, v)
	}
	for _, kind := range ex.kinds {
		id := ex.pick(listener, kind, func(id *identity) bool { return id.receive })
		if id == nil {
			continue
		}
		cl := ex.client(t, listener, id, consumerOpts()...)
		consumeUntil(t, cl, values...)
		cl.Close()
	}
}

// administer: a token carrying the admin_scope creates orders within the
// bounds (or finds it there, on an upstream that seeds it) and is refused
// POLICY_VIOLATION outside them (seed 002 "Bounded administration").
func (ex *example) administer(t *testing.T, listener string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := &identity{mech: oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: ex.adminToken}, nil })}
	cl := ex.client(t, listener, id, kgo.RequestRetries(0))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	create := func(partitions int32, cfg map[string]*string) error {
		t.Helper()
		rs, err := adm.CreateTopics(ctx, partitions, -1, cfg, exampleTopic)
		if err != nil {
			return err
		}
		r, ok := rs[exampleTopic]
		if !ok {
			t.Fatalf("CreateTopics %s: %+v", exampleTopic, rs)
		}
		return r.Err
	}
	str := func(s string) *string { return &s }
	max := int32(ex.snap.Listener.MaxTopicPartitions)
	if err := create(max+1, nil); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("CreateTopics with %d partitions (max_topic_partitions %d): %v, want POLICY_VIOLATION", max+1, max, err)
	}
	if err := create(3, map[string]*string{"retention.ms": str("-1")}); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("CreateTopics with retention.ms=-1: %v, want POLICY_VIOLATION", err)
	}
	if err := create(3, map[string]*string{"retention.ms": str("604800000")}); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("CreateTopics with 3 partitions, retention.ms=604800000: %v", err)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: str("-1")}}, exampleTopic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = rs.On(exampleTopic, nil); err == nil {
			err = r.Err
		}
	}
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("AlterTopicConfigs retention.ms=-1: %v, want POLICY_VIOLATION", err)
	}
}

// consumerOpts make a client read orders from its start, outside any group.
func consumerOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ConsumeTopics(exampleTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
}

func produce(t *testing.T, cl *kgo.Client, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: exampleTopic, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %q: %v", value, err)
	}
}

// consumeUntil polls cl until it has read every value.
func consumeUntil(t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	missing := map[string]bool{}
	for _, v := range values {
		missing[v] = true
	}
	for len(missing) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %d records never read: %v", len(missing), missing)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { delete(missing, string(r.Value)) })
	}
}

// gateway is the flexway process, its output captured.
type gateway struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{} // closed when the process has exited
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startFlexway starts the built binary bin on dir's flexway.yaml, env
// ("NAME=value") added to the test's environment; it is killed at the
// test's end if still running.
func startFlexway(t *testing.T, bin, dir string, env ...string) *gateway {
	t.Helper()
	gw := &gateway{t: t, done: make(chan struct{})}
	gw.cmd = exec.Command(bin, "-config", "flexway.yaml")
	gw.cmd.Dir = dir
	if len(env) > 0 {
		gw.cmd.Env = append(os.Environ(), env...)
	}
	gw.cmd.Stdout, gw.cmd.Stderr = &gw.stdout, &gw.stderr
	if err := gw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = gw.cmd.Wait()
		close(gw.done)
	}()
	t.Cleanup(func() {
		select {
		case <-gw.done:
		default:
			_ = gw.cmd.Process.Kill()
			<-gw.done
		}
		if t.Failed() {
			t.Logf("flexway stdout:\n%s\nflexway stderr:\n%s", gw.stdout.String(), gw.stderr.String())
		}
	})
	return gw
}

// waitLog waits until stderr holds s; it fails if flexway exits first.
func (gw *gateway) waitLog(s string, within time.Duration) {
	gw.t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(gw.stderr.String(), s) {
		select {
		case <-gw.done:
			gw.t.Fatalf("flexway exited (%s) before logging %q", gw.cmd.ProcessState, s)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			gw.t.Fatalf("flexway did not log %q within %v", s, within)
		}
	}
}

// waitStdout waits until flexway's standard output (the banner) holds s,
// and returns it.
func (gw *gateway) waitStdout(s string, within time.Duration) string {
	gw.t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := gw.stdout.String()
		if strings.Contains(out, s) {
			return out
		}
		if time.Now().After(deadline) {
			gw.t.Fatalf("flexway did not print %q within %v:\n%s", s, within, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHealthz waits until the admin endpoint answers /healthz.
func (gw *gateway) waitHealthz(port int) {
	gw.t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
				return
			}
			err = fmt.Errorf("%s: %q", resp.Status, body)
		}
		if time.Now().After(deadline) {
			gw.t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (gw *gateway) signal(sig syscall.Signal) {
	gw.t.Helper()
	if err := gw.cmd.Process.Signal(sig); err != nil {
		gw.t.Fatalf("%v: %v", sig, err)
	}
}

// stop sends SIGTERM: flexway drains and exits 0, with no panic on stderr.
func (gw *gateway) stop() {
	gw.t.Helper()
	gw.signal(syscall.SIGTERM)
	select {
	case <-gw.done:
	case <-time.After(20 * time.Second):
		gw.t.Fatal("flexway did not exit within 20 s of SIGTERM")
	}
	if code := gw.cmd.ProcessState.ExitCode(); code != 0 {
		gw.t.Fatalf("flexway exited with status %d after SIGTERM", code)
	}
	if e := gw.stderr.String(); strings.Contains(e, "panic") || strings.Contains(e, "goroutine ") {
		gw.t.Fatalf("flexway's stderr holds a panic:\n%s", e)
	}
}
