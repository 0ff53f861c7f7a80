package session

import (
	"sync"

	"github.com/flexway/flexway/auth"
)

// connLimits is the listener's bound on connections per address (B1),
// shared by every loop, counted at accept, and its addresses' refused
// logins (logins: auth.Guard, loginguard.go). The tenant's bounds are
// counted on its relay.Tenant at authentication.
type connLimits struct {
	mu     sync.Mutex
	perIP  map[string]int
	logins *auth.Guard
}

func newConnLimits() *connLimits {
	return &connLimits{perIP: map[string]int{}, logins: auth.NewGuard(auth.GuardEntries)}
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
