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
// plaintext (the fallback ranges), max_connections, max_total_in_flight_bytes
// and max_tenant_in_flight_bytes (seed 001 "Rechargement"); then
// observability.kafka.budget_wait_buckets (seed 001: an histogram's bounds are
// fixed at its creation; not served by this version, see notServed, so both
// sides hold the defaults until it is), our own server.admin.address and
// upstreams.<name>.embedded (a socket bound, a broker started at start), and
// server.counters (the seeds are silent: the shared store and the counts it
// holds live as long as the process; a new store would start every tenant's
// budget again from what it holds).
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
		differ("listeners.kafka.plaintext", nk.Plaintext, ok.Plaintext)
		differ("listeners.kafka.max_connections", nk.MaxConnections, ok.MaxConnections)
		differ("listeners.kafka.max_total_in_flight_bytes", nk.MaxTotalInFlightBytes, ok.MaxTotalInFlightBytes)
		differ("listeners.kafka.max_tenant_in_flight_bytes", nk.MaxTenantInFlightBytes, ok.MaxTenantInFlightBytes)
	}
	if s.File != nil && old.File != nil {
		differ("observability.kafka.budget_wait_buckets", budgetBuckets(s.File), budgetBuckets(old.File))
		differ("server.admin.address", adminAddress(s.File), adminAddress(old.File))
		differ("server.counters", s.File.Server.Counters, old.File.Server.Counters)
	}
	names := map[string]bool{}
	for n := range s.Upstreams {
		names[n] = true
	}
	for n := range old.Upstreams {
		names[n] = true
	}
	for n := range names {
		differ("upstreams."+n+".embedded", embeddedOf(s.Upstreams[n]), embeddedOf(old.Upstreams[n]))
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

func adminAddress(f *File) string {
	if f.Server.Admin == nil {
		return ""
	}
	return f.Server.Admin.Address
}

func embeddedOf(u *Upstream) *Embedded {
	if u == nil {
		return nil
	}
	return u.Embedded
}
