package configs

import (
	"reflect"
	"slices"
)

// StartOnlyDiff names the start-only keys (SPEC S1) whose value differs
// between old (the Snapshot in force) and s (a reload's). A reload that
// changes one is refused whole and the old configuration stays:
//
//	if diff := next.StartOnlyDiff(cur); len(diff) > 0 { refuse, log diff }
//
// The keys are listeners.kafka's address, tls, sni_domain, advertised_port,
// plaintext (the fallback ranges of the clusters both serve: a cluster
// added brings its range, a cluster removed takes its range away),
// max_connections, max_total_in_flight_bytes and max_tenant_in_flight_bytes
// (seed 001 "Rechargement"); then observability.kafka.budget_wait_buckets
// (seed 001: an histogram's bounds are fixed at its creation; not served by
// this version, see notServed, so both sides hold the defaults until it
// is), our own observability.otlp (the exporters are made at start),
// upstreams.<name>.embedded of an upstream that serves a cluster on
// both sides (its in-memory brokers and what they hold live as long as the
// process; an embedded upstream added or removed with its clusters is
// started or stopped), and server.counters (the seeds are silent: every
// principal's running buckets and every open session's day and month
// counters are bound to the store; a new one would split a tenant's
// spending between two stores for as long as they live).
// server.admin.address is applied by cmd/flexway, not here.
// The result is sorted; nil when nothing start-only changed or old is nil.
func (s *Snapshot) StartOnlyDiff(old *Snapshot) []string {
	if old == nil || s == nil {
		return nil
	}
	var diff []string
	differ := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			diff = append(diff, name)
		}
	}
	nk, ok := s.Listener, old.Listener
	if nk == nil || ok == nil {
		differ("listeners.kafka", nk == nil, ok == nil)
	} else {
		differ("listeners.kafka.address", nk.Address, ok.Address)
		differ("listeners.kafka.tls", nk.TLS, ok.TLS)
		differ("listeners.kafka.sni_domain", nk.SNIDomain, ok.SNIDomain)
		differ("listeners.kafka.advertised_port", nk.AdvertisedPort, ok.AdvertisedPort)
		differ("listeners.kafka.plaintext", keptRanges(nk.Plaintext, s, old), keptRanges(ok.Plaintext, s, old))
		differ("listeners.kafka.max_connections", nk.MaxConnections, ok.MaxConnections)
		differ("listeners.kafka.max_total_in_flight_bytes", nk.MaxTotalInFlightBytes, ok.MaxTotalInFlightBytes)
		differ("listeners.kafka.max_tenant_in_flight_bytes", nk.MaxTenantInFlightBytes, ok.MaxTenantInFlightBytes)
	}
	if s.File != nil && old.File != nil {
		differ("observability.kafka.budget_wait_buckets", budgetBuckets(s.File), budgetBuckets(old.File))
		differ("observability.otlp", s.File.Observability.OTLP, old.File.Observability.OTLP)
		differ("server.counters", s.File.Server.Counters, old.File.Server.Counters)
	}
	for n := range s.Upstreams {
		if s.serves(n) && old.serves(n) {
			differ("upstreams."+n+".embedded", embeddedOf(s.Upstreams[n]), embeddedOf(old.Upstreams[n]))
		}
	}
	slices.Sort(diff)
	return diff
}

func budgetBuckets(f *File) []Duration {
	if f.Observability.Kafka == nil {
		return nil
	}
	return f.Observability.Kafka.BudgetWaitBuckets
}

// AdminAddress is server.admin.address ("" without the endpoint).
func (s *Snapshot) AdminAddress() string {
	if s.File == nil || s.File.Server.Admin == nil {
		return ""
	}
	return s.File.Server.Admin.Address
}

// serves reports whether upstream name serves a cluster of s.
func (s *Snapshot) serves(name string) bool {
	for _, cl := range s.Clusters {
		if cl.Upstream == name {
			return true
		}
	}
	return false
}

// keptRanges is p without the fallback ranges of the clusters a or b
// declares alone: what a reload must keep as it is.
func keptRanges(p *Plaintext, a, b *Snapshot) *Plaintext {
	if p == nil {
		return nil
	}
	q := *p
	q.Clusters = map[string]*PlaintextCluster{}
	for name, c := range p.Clusters {
		if a.Clusters[name] != nil && b.Clusters[name] != nil {
			q.Clusters[name] = c
		}
	}
	return &q
}

func embeddedOf(u *Upstream) *Embedded {
	if u == nil {
		return nil
	}
	return u.Embedded
}
