package configs

import (
	"net"
	"slices"
	"strings"
)

// The upstreams section (seed 001 "Les amonts", SPEC U1): each upstream's
// brokers or embedded cluster, and how the gateway reaches them (tls, sasl).

var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// checkUpstream checks upstreams.<name>: kafka, brokers or embedded (not
// both), a positive timeout, then its embedded cluster, tls and sasl.
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
		l.checkEmbedded(e, p.at("embedded"))
	}
	if t := u.TLS; t != nil {
		l.checkUpstreamTLS(t, p.at("tls"))
	}
	if s := u.SASL; s != nil {
		l.checkUpstreamSASL(s, p.at("sasl"))
	}
}

// checkEmbedded checks an embedded cluster: its brokers' count, host and
// ports, and its topics' partitions.
func (l *loader) checkEmbedded(e *Embedded, ep path) {
	d := l.cfg
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

// checkUpstreamTLS resolves and checks the CA file and the client
// certificate the gateway presents to the brokers.
func (l *loader) checkUpstreamTLS(t *UpstreamTLS, tp path) {
	t.CAFile = l.resolve(t.CAFile)
	if t.CAFile != "" {
		l.checkCAFile(t.CAFile, tp.at("ca_file"))
	}
	t.CertFile, t.KeyFile = l.resolve(t.CertFile), l.resolve(t.KeyFile)
	l.checkKeyPair(t.CertFile, t.KeyFile, tp)
}

// checkUpstreamSASL checks the gateway's own SASL login at the brokers and
// reads its password if it is "file:PATH".
func (l *loader) checkUpstreamSASL(s *UpstreamSASL, sp path) {
	d := l.cfg
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

// normBroker is the form two upstreams' broker addresses are compared in.
func normBroker(b string) string {
	host, port, err := net.SplitHostPort(strings.TrimSpace(b))
	if err != nil {
		return strings.ToLower(b)
	}
	return net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), port)
}
