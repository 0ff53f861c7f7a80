package configs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// checkFile checks flexway.yaml on its own: each section, with its cross-field
// rules. What needs the contract or the key store is in crossCheck.
func (l *loader) checkFile() {
	f, d := l.f, l.cfg
	switch {
	case !d.has(path{"version"}):
		d.errorf(path{"version"}, "required: write version: 1")
	case f.Version != 1:
		d.errorf(path{"version"}, "%d is not a known version: 1 is the only one", f.Version)
	}
	if f.Contracts.AsyncAPI == "" {
		d.errorf(path{"contracts", "asyncapi"}, "required: the AsyncAPI contract whose operations the listener serves")
	}
	for _, name := range sortedKeys(f.Upstreams) {
		l.checkUpstream(name, f.Upstreams[name])
	}
	l.checkAuth()
	if k := f.Listeners.Kafka; k != nil {
		l.checkListener(k)
	}
	l.checkObservability()
	l.checkServer()
	l.checkPolicies()
	l.checkAudit()
}

// ---- upstreams (seed 001 "Les amonts", SPEC U1) ----

var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

func (l *loader) checkUpstream(name string, u *Upstream) {
	d := l.cfg
	p := path{"upstreams", name}
	if u == nil {
		d.errorf(p, "empty: declare protocol: kafka and brokers (or embedded)")
		return
	}
	switch u.Protocol {
	case "kafka":
	case "":
		d.errorf(p.at("protocol"), "required: kafka")
	default:
		d.errorf(p.at("protocol"), "%q is not served here: kafka is the only protocol", u.Protocol)
	}
	switch {
	case len(u.Brokers) > 0 && u.Embedded != nil:
		d.errorf(p.at("embedded"), "an embedded upstream runs its own brokers: remove brokers, or embedded")
	case len(u.Brokers) == 0 && u.Embedded == nil:
		d.errorf(p.at("brokers"), "required: at least one broker address host:port (or embedded)")
	}
	seen := map[string]bool{}
	for i, b := range u.Brokers {
		if err := checkHostPort(b, false); err != nil {
			d.errorf(p.at("brokers", i), "%q: %v", b, err)
		} else if seen[normBroker(b)] {
			d.errorf(p.at("brokers", i), "%q is listed twice", b)
		}
		seen[normBroker(b)] = true
	}
	if u.Timeout <= 0 {
		d.errorf(p.at("timeout"), "%s: must be positive", u.Timeout)
	}
	if u.Embedded != nil && u.TLS != nil {
		d.errorf(p.at("tls"), "the embedded upstream is reached in clear text: remove tls, or embedded")
	}
	if u.Embedded != nil && u.SASL != nil {
		d.errorf(p.at("sasl"), "the embedded upstream asks no SASL: remove sasl, or embedded")
	}
	if e := u.Embedded; e != nil {
		ep := p.at("embedded")
		if e.Brokers < 1 || e.Brokers > 64 {
			d.errorf(ep.at("brokers"), "%d is outside 1..64", e.Brokers)
		}
		if net.ParseIP(e.Host) == nil && !isDNSName(e.Host) {
			d.errorf(ep.at("host"), "%q is neither an IP address nor a host name", e.Host)
		}
		if e.Port < 0 || e.Port+max(e.Brokers, 1)-1 > 65535 {
			d.errorf(ep.at("port"), "%d: the brokers' ports must fit in 1..65535 (0: any free ports)", e.Port)
		}
		if e.Partitions < 1 {
			d.errorf(ep.at("partitions"), "%d: a topic has at least one partition", e.Partitions)
		}
	}
	if t := u.TLS; t != nil {
		tp := p.at("tls")
		t.CAFile = l.resolve(t.CAFile)
		if t.CAFile != "" {
			l.checkCAFile(t.CAFile, tp.at("ca_file"))
		}
		t.CertFile, t.KeyFile = l.resolve(t.CertFile), l.resolve(t.KeyFile)
		l.checkKeyPair(t.CertFile, t.KeyFile, tp)
	}
	if s := u.SASL; s != nil {
		sp := p.at("sasl")
		if !slices.Contains(saslMechanisms, s.Mechanism) {
			if s.Mechanism == "" {
				d.errorf(sp.at("mechanism"), "required: one of %s", strings.Join(saslMechanisms, ", "))
			} else {
				d.errorf(sp.at("mechanism"), "%q is not one of %s", s.Mechanism, strings.Join(saslMechanisms, ", "))
			}
		}
		if s.Username == "" {
			d.errorf(sp.at("username"), "required: the gateway's own principal at the brokers")
		}
		if s.Password == "" {
			d.errorf(sp.at("password"), "required: the password, or \"file:/path\"")
		} else {
			l.readSecret(&s.Password, sp.at("password"))
		}
	}
}

// normBroker is the form two upstreams' broker addresses are compared in.
func normBroker(b string) string {
	host, port, err := net.SplitHostPort(strings.TrimSpace(b))
	if err != nil {
		return strings.ToLower(b)
	}
	return net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), port)
}

// ---- auth (seed 001 "Les identités", SPEC I1-I3) ----

func (l *loader) checkAuth() {
	d, a := l.cfg, &l.f.Auth
	names := map[string]bool{}
	for i := range a.Issuers {
		is := &a.Issuers[i]
		p := path{"auth", "issuers", i}
		switch {
		case is.Name == "":
			d.errorf(p.at("name"), "required: the issuer's name")
		case names[is.Name]:
			d.errorf(p.at("name"), "%q names another issuer too", is.Name)
		}
		names[is.Name] = true
		switch {
		case is.Discovery != "" && is.JWKS != "":
			d.errorf(p.at("jwks"), "give discovery or jwks, not both")
		case is.Discovery == "" && is.JWKS == "":
			d.errorf(p, "required: discovery (the OpenID configuration URL) or jwks (\"file:/path\")")
		case is.Discovery != "":
			if err := CheckFetchURL(is.Discovery); err != nil {
				d.errorf(p.at("discovery"), "%v", err)
			}
		default:
			l.checkJWKS(is, p.at("jwks"))
		}
		if is.Audience == "" {
			d.errorf(p.at("audience"), "required: the audience the tokens must carry")
		}
		if is.TenantClaim == "" {
			d.errorf(p.at("tenant_claim"), "required: the claim that names the tenant (a token without a tenant is refused)")
		}
		if is.CAFile != "" {
			is.CAFile = l.resolve(is.CAFile)
			l.checkCAFile(is.CAFile, p.at("ca_file"))
		}
	}
	if k := a.APIKeys; k != nil {
		if _, ok := strings.CutPrefix(k.Store, "file:"); !ok || k.Store == "file:" {
			d.errorf(path{"auth", "api_keys", "store"}, "required: \"file:PATH\", the key store (PATH relative to this file's folder)")
		}
	}
	if m := a.MTLS; m != nil {
		ids := map[string]bool{}
		for i, c := range m.Clients {
			p := path{"auth", "mtls", "clients", i}
			switch {
			case c.ID == "":
				d.errorf(p.at("id"), "required: the client's id")
			case ids[c.ID]:
				d.errorf(p.at("id"), "%q names another client too", c.ID)
			}
			ids[c.ID] = true
			if c.Subject == "" {
				d.errorf(p.at("subject"), "required: the certificate's subject, e.g. \"CN=billing-app\"")
			}
			// The tenant is not checked here: an identity whose tenant is not
			// letters, digits and '-' is refused at authentication (SPEC I4).
		}
	}
}

// CheckFetchURL accepts an https URL, or http to a loopback host (tests and
// sidecars); auth applies it to discovery and JWKS URLs at fetch time too: a key set fetched in clear from elsewhere could be swapped.
func CheckFetchURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
		return fmt.Errorf("%q: keys are fetched over https (http only to a loopback address)", s)
	}
	return fmt.Errorf("%q: https URL expected", s)
}

func (l *loader) checkJWKS(is *Issuer, p path) {
	ref, ok := strings.CutPrefix(is.JWKS, "file:")
	if !ok || ref == "" {
		l.cfg.errorf(p, "%q: \"file:/path\" of a JSON Web Key Set expected", is.JWKS)
		return
	}
	name := l.resolve(ref)
	is.JWKS = "file:" + name
	data, err := readConfigFile(name)
	if err != nil {
		l.cfg.errorf(p, "cannot read %s: %s", name, unwrapPathError(err))
		return
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil || len(set.Keys) == 0 {
		l.cfg.errorf(p, "%s is not a JSON Web Key Set with at least one key", name)
	}
}

// ---- listeners.kafka (seed 001 "L'écouteur TLS", "Le repli en clair"; seed 002 "Listener bounds") ----

func (l *loader) checkListener(k *KafkaListener) {
	d := l.cfg
	p := path{"listeners", "kafka"}
	if k.TLS == nil && k.Plaintext == nil {
		d.errorf(p, "declares neither tls nor plaintext: no client could connect")
	}
	if t := k.TLS; t != nil {
		if k.Address == "" {
			d.errorf(p.at("address"), "required with tls: the port of the TLS listener, e.g. \":9093\"")
		} else if err := checkHostPort(k.Address, true); err != nil {
			d.errorf(p.at("address"), "%q: %v", k.Address, err)
		}
		if k.SNIDomain == "" {
			d.errorf(p.at("sni_domain"), "required with tls: clients name brokers bootstrap.<cluster>.<sni_domain> and broker-<id>.<cluster>.<sni_domain>")
		} else if !isDNSName(k.SNIDomain) {
			d.errorf(p.at("sni_domain"), "%q is not a DNS name", k.SNIDomain)
		}
		tp := p.at("tls")
		if t.CertFile == "" {
			d.errorf(tp.at("cert_file"), "required: the certificate covering *.<cluster>.<sni_domain>")
		}
		if t.KeyFile == "" {
			d.errorf(tp.at("key_file"), "required: the certificate's private key")
		}
		t.CertFile, t.KeyFile = l.resolve(t.CertFile), l.resolve(t.KeyFile)
		if t.CertFile != "" && t.KeyFile != "" {
			l.checkKeyPair(t.CertFile, t.KeyFile, tp)
		}
		if t.ClientCAFile != "" {
			t.ClientCAFile = l.resolve(t.ClientCAFile)
			l.checkCAFile(t.ClientCAFile, tp.at("client_ca_file"))
		}
	} else {
		// Without TLS there is no SNI: these keys would be silently unused.
		for key, set := range map[string]bool{"address": k.Address != "", "sni_domain": k.SNIDomain != "", "advertised_port": k.AdvertisedPort != 0} {
			if set {
				d.errorf(p.at(key), "belongs to the TLS listener, and tls is not declared (the plaintext fallback listens on plaintext.clusters' ports)")
			}
		}
	}
	if k.AdvertisedPort < 0 || k.AdvertisedPort > 65535 {
		d.errorf(p.at("advertised_port"), "%d is outside 1..65535", k.AdvertisedPort)
	}
	if pt := k.Plaintext; pt != nil {
		l.checkPlaintext(k, pt, p.at("plaintext"))
	}
	l.checkBounds(k, p)
	if q := k.Quotas; q != nil {
		l.checkQuotas(q, p.at("quotas"))
	}
}

func (l *loader) checkPlaintext(k *KafkaListener, pt *Plaintext, p path) {
	d := l.cfg
	if !pt.MeshOnly {
		d.errorf(p.at("mesh_only"), "clear text is refused without mesh_only: true (only a mesh that encrypts between pods may carry it)")
	}
	switch {
	case pt.AdvertisedHost == "":
		d.errorf(p.at("advertised_host"), "required: the host name clients reach the fallback ports at")
	case net.ParseIP(pt.AdvertisedHost) == nil && !isDNSName(pt.AdvertisedHost):
		d.errorf(p.at("advertised_host"), "%q is neither an IP address nor a host name", pt.AdvertisedHost)
	}
	if h := pt.BindHost; h != "" && net.ParseIP(h) == nil && !isDNSName(h) {
		d.errorf(p.at("bind_host"), "%q is neither an IP address nor a host name", h)
	}
	if len(pt.Clusters) == 0 {
		d.errorf(p.at("clusters"), "required: at least one virtual cluster's port range")
	}
	type span struct {
		name     string
		from, to int
	}
	var spans []span
	for _, name := range sortedKeys(pt.Clusters) {
		c := pt.Clusters[name]
		cp := p.at("clusters", name)
		if c == nil {
			d.errorf(cp, "empty: declare ports: { from, to }")
			continue
		}
		good := true
		for _, e := range []struct {
			key string
			v   int
		}{{"from", c.Ports.From}, {"to", c.Ports.To}} {
			if e.v < 1 || e.v > 65535 {
				d.errorf(cp.at("ports", e.key), "%d is outside 1..65535", e.v)
				good = false
			}
		}
		if good && c.Ports.From >= c.Ports.To {
			d.errorf(cp.at("ports"), "from %d must be below to %d: from is the bootstrap, from+1+n node first_node_id+n", c.Ports.From, c.Ports.To)
			good = false
		}
		if c.FirstNodeID < 0 {
			d.errorf(cp.at("first_node_id"), "%d: node ids are not negative", c.FirstNodeID)
		}
		if good {
			spans = append(spans, span{name, c.Ports.From, c.Ports.To})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	for i := 1; i < len(spans); i++ {
		if a, b := spans[i-1], spans[i]; b.from <= a.to {
			d.errorf(p.at("clusters", b.name, "ports"), "%d..%d overlaps %s's %d..%d", b.from, b.to, a.name, a.from, a.to)
		}
	}
	if k.TLS != nil {
		if _, port, err := net.SplitHostPort(k.Address); err == nil {
			if n, _ := strconv.Atoi(port); n != 0 {
				for _, s := range spans {
					if n >= s.from && n <= s.to {
						d.errorf(p.at("clusters", s.name, "ports"), "%d..%d holds the TLS listener's port %d", s.from, s.to, n)
					}
				}
			}
		}
	}
}

// maxFrame is the largest size a Kafka frame can announce (an int32).
const maxFrame ByteSize = 1<<31 - 1

func (l *loader) checkBounds(k *KafkaListener, p path) {
	d := l.cfg
	for _, b := range []struct {
		key string
		v   ByteSize
	}{{"max_request_bytes", k.MaxRequestBytes}, {"max_response_bytes", k.MaxResponseBytes}} {
		if b.v < UnauthenticatedMaxRequestBytes || b.v > maxFrame {
			d.errorf(p.at(b.key), "%s is outside 64KiB..2GiB-1 (the largest Kafka frame)", b.v)
		}
	}
	if k.MaxConnections < 1 {
		d.errorf(p.at("max_connections"), "%d: must be positive", k.MaxConnections)
	}
	for _, t := range []struct {
		key string
		v   Duration
	}{{"auth_timeout", k.AuthTimeout}, {"idle_timeout", k.IdleTimeout}, {"max_fetch_wait", k.MaxFetchWait}} {
		if t.v <= 0 {
			d.errorf(p.at(t.key), "%s: must be positive", t.v)
		}
	}
	for _, c := range []struct {
		key  string
		v    int
		zero bool // 0 means "off"
	}{
		{"max_unauthenticated_connections", *k.MaxUnauthenticatedConnections, false},
		{"max_connections_per_ip", *k.MaxConnectionsPerIP, true},
		{"max_connections_per_tenant", *k.MaxConnectionsPerTenant, false},
		{"max_connection_rate_per_tenant", *k.MaxConnectionRatePerTenant, true},
	} {
		switch {
		case c.v < 0:
			d.errorf(p.at(c.key), "%d is negative", c.v)
		case c.v == 0 && !c.zero:
			d.errorf(p.at(c.key), "0 would refuse every connection")
		}
	}
	if k.MaxInFlightBytes <= 0 {
		d.errorf(p.at("max_in_flight_bytes"), "%s: must be positive", k.MaxInFlightBytes)
	}
	if k.MaxTotalInFlightBytes < k.MaxInFlightBytes {
		// Said once: the tenant's range below would be empty too.
		d.errorf(p.at("max_total_in_flight_bytes"), "%s is below max_in_flight_bytes %s", k.MaxTotalInFlightBytes, k.MaxInFlightBytes)
	} else if t := k.MaxTenantInFlightBytes; t < k.MaxInFlightBytes || t > k.MaxTotalInFlightBytes {
		d.errorf(p.at("max_tenant_in_flight_bytes"), "%s is outside max_in_flight_bytes..max_total_in_flight_bytes (%s..%s)", t, k.MaxInFlightBytes, k.MaxTotalInFlightBytes)
	}
	checkRange(d, p.at("max_session_lifetime"), k.MaxSessionLifetime, time.Minute, 24*time.Hour)
	if k.MaxTopicPartitions < 1 {
		d.errorf(p.at("max_topic_partitions"), "%d: a topic has at least one partition", k.MaxTopicPartitions)
	}
	if v := k.OnTenantBudgetExceeded; v != "wait" && v != "close" {
		d.errorf(p.at("on_tenant_budget_exceeded"), "%q is not a choice: wait or close", v)
	}
}

func checkRange(d *doc, p path, v Duration, lo, hi time.Duration) {
	if v.D() < lo || v.D() > hi {
		d.errorf(p, "%s is outside %s..%s", fmtDuration(v.D()), fmtDuration(lo), fmtDuration(hi))
	}
}

// fmtDuration writes 1m, 24h, 100ms rather than Go's 1m0s, 24h0m0s.
func fmtDuration(v time.Duration) string {
	s := v.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func (l *loader) checkQuotas(q *Quotas, p path) {
	d := l.cfg
	checkRange(d, p.at("window"), q.Window, 100*time.Millisecond, 10*time.Second)
	checkRange(d, p.at("max_throttle"), q.MaxThrottle, 100*time.Millisecond, 30*time.Second)
	for _, r := range []struct {
		key   string
		rates *Rates
	}{{"client", q.Client}, {"tenant", q.Tenant}} {
		if r.rates != nil && r.rates.RequestRate < 0 {
			d.errorf(p.at(r.key, "request_rate"), "%d is negative", r.rates.RequestRate)
		}
	}
	if q.Quota != "" {
		pol, ok := l.f.Policies.Definitions[q.Quota]
		switch {
		case !ok || pol == nil:
			d.errorf(p.at("quota"), "%q names no policies.definitions entry", q.Quota)
		case pol.Type != "quota":
			d.errorf(p.at("quota"), "%q is a policy of type %q, not quota", q.Quota, pol.Type)
		}
		if l.f.Server.Counters == nil || l.f.Server.Counters.Store == "" {
			d.errorf(p.at("quota"), "a quota policy is counted in the shared store: server.counters.store is required")
		}
	}
}

// ---- observability, server, policies ----

func (l *loader) checkObservability() {
	o := l.f.Observability.Kafka
	p := path{"observability", "kafka", "budget_wait_buckets"}
	if len(o.BudgetWaitBuckets) > 20 {
		l.cfg.errorf(p, "%d bounds: 20 at most", len(o.BudgetWaitBuckets))
	}
	for i, b := range o.BudgetWaitBuckets {
		switch {
		case b <= 0:
			l.cfg.errorf(p.at(i), "%s: must be positive", b)
		case i > 0 && b <= o.BudgetWaitBuckets[i-1]:
			l.cfg.errorf(p.at(i), "%s: the bounds must increase", b)
		}
	}
}

func (l *loader) checkServer() {
	d, s := l.cfg, &l.f.Server
	if c := s.Counters; c != nil {
		p := path{"server", "counters"}
		store, missing := expandEnv(c.Store)
		switch {
		case len(missing) > 0:
			d.errorf(p.at("store"), "the environment does not set %s", strings.Join(missing, ", "))
		case store == "":
			d.errorf(p.at("store"), "required: the shared counter store, redis://host:port")
		default:
			// The URL may hold a password: never echo it.
			if u, err := url.Parse(store); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
				d.errorf(p.at("store"), "not a redis://, rediss:// or unix:// URL")
			}
		}
		c.Store = store
		if c.Sync <= 0 {
			d.errorf(p.at("sync"), "%s: must be positive", c.Sync)
		}
	}
	checkRange(d, path{"server", "shutdown_timeout"}, s.ShutdownTimeout, time.Second, 10*time.Minute)
	if a := s.Admin; a != nil && a.Address != "" {
		if err := checkHostPort(a.Address, true); err != nil {
			d.errorf(path{"server", "admin", "address"}, "%q: %v", a.Address, err)
		}
	}
}

// expandEnv replaces ${NAME} by the environment's value (the seeds write
// server.counters.store: "${COUNTERS_URL}"), and names the unset variables.
func expandEnv(s string) (string, []string) {
	var missing []string
	out := os.Expand(s, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, "${"+name+"}")
		}
		return v
	})
	return out, missing
}

func (l *loader) checkPolicies() {
	d := l.cfg
	for _, name := range sortedKeys(l.f.Policies.Definitions) {
		pol := l.f.Policies.Definitions[name]
		p := path{"policies", "definitions", name}
		if pol == nil {
			d.errorf(p, "empty: declare type: quota and its config")
			continue
		}
		if pol.Type != "quota" {
			if pol.Type == "" {
				d.errorf(p.at("type"), "required: quota")
			} else {
				d.errorf(p.at("type"), "%q is not a policy the Kafka listener applies: quota is", pol.Type)
			}
			continue
		}
		lim := pol.Config.Limits
		if lim == nil {
			d.errorf(p.at("config", "limits"), "required: { day, month }, the tenant's Produce budget")
			continue
		}
		for key, v := range map[string]int64{"day": lim.Day, "month": lim.Month} {
			if v < 0 {
				d.errorf(p.at("config", "limits", key), "%d: a positive number of requests expected", v)
			}
		}
		if lim.Day == 0 && lim.Month == 0 {
			d.errorf(p.at("config", "limits"), "required: day, month or both")
		}
	}
}

// ---- across files ----

// crossCheck checks what joins flexway.yaml to the contract and the stores.
func (l *loader) crossCheck() {
	d, k := l.cfg, l.f.Listeners.Kafka
	lp := path{"listeners", "kafka"}
	switch {
	case k == nil && len(l.ops) == 0:
		d.errorf(lp, "required: the Kafka listener (tls, or the plaintext fallback)")
	case k != nil && l.contractOK && len(l.ops) == 0:
		d.errorf(lp, "declared, and no operation of the contract is served to Kafka clients (x-flexway-kafka-proxy)")
	}
	if k != nil && l.contractOK {
		if pt := k.Plaintext; pt != nil {
			for _, name := range sortedKeys(pt.Clusters) {
				if l.clusters[name] == nil {
					d.errorf(lp.at("plaintext", "clusters", name), "fallback ports of cluster %q, which the contract does not declare (no x-flexway-kafka-proxy names it)", name)
				}
			}
		}
		if k.TLS == nil {
			for _, name := range sortedKeys(l.clusters) {
				if k.Plaintext != nil && k.Plaintext.Clusters[name] == nil {
					d.errorf(lp.at("plaintext", "clusters"), "cluster %q has no fallback ports, and there is no TLS listener: its clients could not connect", name)
				}
			}
		}
	}
	if m := l.f.Auth.MTLS; m != nil {
		if len(m.Clients) > 0 && (k == nil || k.TLS == nil || k.TLS.ClientCAFile == "") {
			d.errorf(path{"auth", "mtls", "clients"}, "client certificates are verified by listeners.kafka.tls.client_ca_file, which is not declared")
		}
		for i, c := range m.Clients {
			l.checkIdentityOperations(d, path{"auth", "mtls", "clients", i, "operations"}, c.Operations)
		}
	}
}

// ---- shared helpers ----

func (l *loader) checkCAFile(name string, p path) {
	data, err := readConfigFile(name)
	if err != nil {
		l.cfg.errorf(p, "cannot read %s: %s", name, unwrapPathError(err))
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		l.cfg.errorf(p, "%s holds no PEM certificate", name)
	}
}

// checkKeyPair checks a certificate and its key, given together or not at all.
func (l *loader) checkKeyPair(cert, key string, p path) {
	switch {
	case cert == "" && key == "":
		return
	case cert == "":
		l.cfg.errorf(p.at("cert_file"), "required with key_file")
		return
	case key == "":
		l.cfg.errorf(p.at("key_file"), "required with cert_file")
		return
	}
	certPEM, err := readConfigFile(cert)
	if err != nil {
		l.cfg.errorf(p.at("cert_file"), "cannot read %s: %s", cert, unwrapPathError(err))
		return
	}
	keyPEM, err := readConfigFile(key)
	if err != nil {
		l.cfg.errorf(p.at("key_file"), "cannot read %s: %s", key, unwrapPathError(err))
		return
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		// crypto/tls's message names the problem, never the key's bytes.
		l.cfg.errorf(p.at("cert_file"), "%s and %s: %s", cert, key, err)
	}
}

// checkHostPort accepts host:port (host may be empty: all addresses);
// zeroPort allows port 0 (a listener bound to any free port, in tests).
func checkHostPort(s string, zeroPort bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("not host:port")
	}
	n, err := strconv.Atoi(port)
	lo := 1
	if zeroPort {
		lo = 0
	}
	if err != nil || n < lo || n > 65535 {
		return fmt.Errorf("port %q is outside %d..65535", port, lo)
	}
	if host != "" && net.ParseIP(host) == nil && !isDNSName(host) {
		return fmt.Errorf("%q is neither an IP address nor a host name", host)
	}
	if host == "" && !zeroPort {
		return fmt.Errorf("the host is missing")
	}
	return nil
}

// isDNSLabel is RFC 1123's label, lower case (cluster names are matched
// against SNI names, which clients send in lower case).
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isDNSName accepts a host name: labels of letters, digits and '-', any case.
func isDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if !isDNSLabel(strings.ToLower(label)) {
			return false
		}
	}
	return true
}

// topicNameProblem says why s cannot be a Kafka topic name, "" if it can:
// [a-zA-Z0-9._-], at most 249 characters, not "." nor "..", and not
// starting with "__" (Kafka's internal topics).
func topicNameProblem(s string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > 249:
		return "longer than 249 characters"
	case s == "." || s == "..":
		return "not a topic name"
	case strings.HasPrefix(s, "__"):
		return "starts with __, the namespace of Kafka's internal topics"
	}
	for i := 0; i < len(s); i++ {
		if !topicChar(s[i]) {
			return fmt.Sprintf("holds %q: a topic name is letters, digits, '.', '_' and '-'", s[i])
		}
	}
	return ""
}

func topicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// MinAuditTopicKey is the shortest audit.topic_key, in bytes.
const MinAuditTopicKey = 16

// checkAudit checks audit (O3): decisions and the key of the topics' hash.
func (l *loader) checkAudit() {
	d, a := l.cfg, l.f.Audit
	if a == nil {
		return
	}
	p := path{"audit"}
	if a.Decisions != "refusals" && a.Decisions != "all" {
		d.errorf(p.at("decisions"), "%q is not a choice: refusals or all", a.Decisions)
	}
	if a.TopicKey == "" {
		// The seed writes audit: { decisions: … } alone: the key is then
		// derived from this replica's configuration (flexway.yaml and the key
		// store as read), the same on replicas that share them; a change of
		// either changes the topics' hashes (topic_key keeps them).
		if l.files != nil {
			a.TopicKey = Secret(hex.EncodeToString(l.files.Sum(nil)))
		}
		return
	}
	l.readSecret(&a.TopicKey, p.at("topic_key"))
	if n := len(a.TopicKey); n > 0 && n < MinAuditTopicKey {
		d.errorf(p.at("topic_key"), "%d bytes: %d at least", n, MinAuditTopicKey)
	}
}
