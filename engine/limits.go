package engine

import (
	"sync"
	"time"
)

// connLimits are the listener's connection bounds shared by every loop
// (B1): connections per address (at accept), per tenant and new
// connections per tenant and second (at authentication).
type connLimits struct {
	mu     sync.Mutex
	perIP  map[string]int
	perTen map[string]int
	rate   map[string]*tenantRate
}

type tenantRate struct {
	second int64
	n      int
}

func newConnLimits() *connLimits {
	return &connLimits{perIP: map[string]int{}, perTen: map[string]int{}, rate: map[string]*tenantRate{}}
}

// takeIP counts a new connection of ip; false past max (0 = off).
func (l *connLimits) takeIP(ip string, max int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if max > 0 && l.perIP[ip] >= max {
		return false
	}
	l.perIP[ip]++
	return true
}

func (l *connLimits) dropIP(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip] <= 1 {
		delete(l.perIP, ip)
	} else {
		l.perIP[ip]--
	}
}

// takeTenant counts a newly authenticated connection of tenant: "" if
// admitted, else the bound that refuses it. A re-authentication takes
// nothing (KIP-368): it is never called for one.
func (l *connLimits) takeTenant(tenant string, maxConns, maxRate int, now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if maxConns > 0 && l.perTen[tenant] >= maxConns {
		return "max_connections_per_tenant"
	}
	if maxRate > 0 {
		r := l.rate[tenant]
		if r == nil {
			r = &tenantRate{}
			l.rate[tenant] = r
		}
		if s := now.Unix(); s != r.second {
			r.second, r.n = s, 0
		}
		if r.n >= maxRate {
			return "max_connection_rate_per_tenant"
		}
		r.n++
	}
	l.perTen[tenant]++
	return ""
}

func (l *connLimits) dropTenant(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perTen[tenant] <= 1 {
		delete(l.perTen, tenant)
		// The rate window of an idle tenant is forgotten with it.
		if r := l.rate[tenant]; r != nil && r.second < time.Now().Unix()-1 {
			delete(l.rate, tenant)
		}
	} else {
		l.perTen[tenant]--
	}
}
