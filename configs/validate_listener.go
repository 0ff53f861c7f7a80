package configs

import (
	"net"
	"sort"
	"strconv"
	"time"
)

// The listeners.kafka section (seed 001 "L'écouteur TLS", "Le repli en
// clair"; seed 002 "Listener bounds"): the TLS listener, the plaintext
// fallback's ports, the bounds on connections, frames and bytes in flight.

// checkListener checks listeners.kafka: the TLS listener or the plaintext
// fallback (at least one), then its bounds and its quotas.
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

// checkPlaintext checks the plaintext fallback: mesh_only, its hosts, and
// its clusters' port ranges, which overlap neither each other nor the TLS
// listener's port.
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

// checkBounds checks the listener's bounds: frame sizes, connection counts
// and rates, timeouts, bytes in flight, session lifetime, partitions per
// topic, on_tenant_budget_exceeded.
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
