package auth

import (
	"container/list"
	"net/netip"
	"sync"
	"time"
)

// Failed logins cost the guesser time (issue 33.4). A client address gets
// GuardFree refused authentications a second at no cost; each refusal
// past them in the same second raises the address's level by one, and a
// refusal of an address at level n is answered GuardBase·2^(n-1) later,
// at most GuardMax. Every GuardDecay without a refusal past the free ones
// the level falls by one: an address that stops guessing is forgotten. A good credential is never looked up
// here: only refusals are delayed (the caller answers a verified identity
// at once, from whatever address). The table holds GuardEntries addresses
// at most, the least recently refused evicted first: a flood of source
// addresses costs a fixed amount of memory. IPv6 addresses count by their
// /64, what one host is usually given.
const (
	GuardFree    = 5
	GuardBase    = 100 * time.Millisecond
	GuardMax     = 3 * time.Second
	GuardDecay   = 5 * time.Second
	GuardEntries = 4096
)

// guardMaxLevel is the first level whose delay reaches GuardMax: the
// level stops there (no overflow, and a capped address decays in a
// bounded time).
var guardMaxLevel = func() int {
	n := 1
	for GuardBase<<(n-1) < GuardMax {
		n++
	}
	return n
}()

// Guard is the table of addresses refused recently. Safe for concurrent
// use (every loop refuses into the one table); each call is O(1).
type Guard struct {
	mu      sync.Mutex
	entries int
	m       map[netip.Addr]*list.Element
	lru     list.List // of *guardEntry, the most recently refused first
}

type guardEntry struct {
	key    netip.Addr
	window time.Time // the start of its current one-second window
	n      int       // refusals in that window
	level  int
	since  time.Time // its last refusal past GuardFree, or its last decay step
}

// NewGuard makes a table of at most entries addresses (GuardEntries when
// entries < 1).
func NewGuard(entries int) *Guard {
	if entries < 1 {
		entries = GuardEntries
	}
	return &Guard{entries: entries, m: make(map[netip.Addr]*list.Element, entries)}
}

// Refused records a refused authentication from ip (the client's address
// as net.IP.String writes it) at now and returns how long its answer
// waits: 0 while the address is within GuardFree a second and its level
// has decayed to nothing.
func (g *Guard) Refused(ip string, now time.Time) time.Duration {
	key := guardKey(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entry(key, now)
	e.decay(now)
	if now.Sub(e.window) >= time.Second || now.Before(e.window) {
		e.window, e.n = now, 0
	}
	e.n++
	if e.n > GuardFree {
		e.level = min(e.level+1, guardMaxLevel)
		e.since = now // the decay runs from the last refusal past the free ones
	}
	return GuardDelay(e.level)
}

// Delay is the delay ip's next refusal would get at now, without counting
// one (what a status page or a test reads).
func (g *Guard) Delay(ip string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	el, ok := g.m[guardKey(ip)]
	if !ok {
		return 0
	}
	e := el.Value.(*guardEntry)
	e.decay(now)
	return GuardDelay(e.level)
}

// Len is the number of addresses in the table.
func (g *Guard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m)
}

// GuardDelay is the delay of an address at level.
func GuardDelay(level int) time.Duration {
	if level <= 0 {
		return 0
	}
	return min(GuardBase<<(level-1), GuardMax)
}

// entry finds key's entry, made (the least recent one evicted when the
// table is full) if it is not there, and moves it to the front.
func (g *Guard) entry(key netip.Addr, now time.Time) *guardEntry {
	if el, ok := g.m[key]; ok {
		g.lru.MoveToFront(el)
		return el.Value.(*guardEntry)
	}
	var e *guardEntry
	if len(g.m) >= g.entries {
		last := g.lru.Back()
		e = last.Value.(*guardEntry)
		delete(g.m, e.key)
		g.lru.Remove(last)
		*e = guardEntry{} // reused: no allocation under a flood of addresses
	} else {
		e = &guardEntry{}
	}
	e.key, e.window, e.since = key, now, now
	g.m[key] = g.lru.PushFront(e)
	return e
}

// decay takes the level down one step for each GuardDecay without a
// refusal past the free ones.
func (e *guardEntry) decay(now time.Time) {
	if e.level == 0 {
		return
	}
	steps := int(now.Sub(e.since) / GuardDecay)
	if steps <= 0 {
		return
	}
	if steps >= e.level {
		e.level = 0
		return
	}
	e.level -= steps
	e.since = e.since.Add(time.Duration(steps) * GuardDecay)
}

// guardKey is the table's key of an address: IPv4 whole, IPv6 by its /64;
// what does not parse (no address: a test's pipe) shares the zero key.
func guardKey(ip string) netip.Addr {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
