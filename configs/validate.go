package configs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// checkFile checks flexway.yaml on its own: each section, with its cross-field
// rules, each in a file of its own (validate_upstreams.go, validate_auth.go,
// validate_listener.go, validate_quotas.go, validate_server.go). What needs
// the contract or the key store is in crossCheck, below with the helpers the
// sections share.
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

// checkCAFile checks that a CA file is readable and holds a PEM certificate.
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

// checkRange reports a duration outside lo..hi.
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
