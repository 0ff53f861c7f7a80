package auth

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// Issue 33.4: GuardFree refusals a second are free; each one past them in
// the same second doubles the address's delay from GuardBase, up to
// GuardMax; another address is not touched.
func TestGuardGrowsAndCaps(t *testing.T) {
	g := NewGuard(16)
	var got []time.Duration
	for i := range 12 {
		got = append(got, g.Refused("192.0.2.7", t0.Add(time.Duration(i)*time.Millisecond)))
	}
	want := []time.Duration{0, 0, 0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, GuardMax, GuardMax}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delays of 12 refusals in a second: %v, want %v", got, want)
	}
	if GuardMax != 3*time.Second {
		t.Fatalf("GuardMax %v: the README says 3 s", GuardMax)
	}
	if d := g.Refused("192.0.2.8", t0.Add(20*time.Millisecond)); d != 0 {
		t.Fatalf("another address's first refusal: delayed %v", d)
	}
}

// Refusals at the free rate, second after second, are never delayed.
func TestGuardFreeRateNeverDelayed(t *testing.T) {
	g := NewGuard(16)
	for s := range 30 {
		for i := range GuardFree {
			now := t0.Add(time.Duration(s)*time.Second + time.Duration(i)*100*time.Millisecond)
			if d := g.Refused("192.0.2.7", now); d != 0 {
				t.Fatalf("second %d, refusal %d of %d: delayed %v", s, i+1, GuardFree, d)
			}
		}
	}
}

// The delay forgets: one step down each GuardDecay without a refusal past
// the free ones; an address at the cap is forgotten after guardMaxLevel
// steps. Refusals within the free rate keep the delay but do not reset the
// decay.
func TestGuardForgets(t *testing.T) {
	g := NewGuard(16)
	ip := "198.51.100.1"
	for i := range GuardFree + guardMaxLevel {
		g.Refused(ip, t0.Add(time.Duration(i)*time.Millisecond))
	}
	last := t0.Add(time.Duration(GuardFree+guardMaxLevel-1) * time.Millisecond)
	if d := g.Delay(ip, last); d != GuardMax {
		t.Fatalf("after a burst: %v, want the cap %v", d, GuardMax)
	}
	if d := g.Delay(ip, last.Add(GuardDecay-time.Millisecond)); d != GuardMax {
		t.Fatalf("just before a quiet GuardDecay: %v, want %v still", d, GuardMax)
	}
	if d := g.Delay(ip, last.Add(GuardDecay)); d != GuardDelay(guardMaxLevel-1) {
		t.Fatalf("after GuardDecay of quiet: %v, want %v", d, GuardDelay(guardMaxLevel-1))
	}
	// One refusal (within the free rate) after 2 steps: delayed at the
	// decayed level, the decay goes on.
	at := last.Add(2 * GuardDecay)
	if d := g.Refused(ip, at); d != GuardDelay(guardMaxLevel-2) {
		t.Fatalf("a refusal after two quiet steps: %v, want %v", d, GuardDelay(guardMaxLevel-2))
	}
	if d := g.Delay(ip, last.Add(time.Duration(guardMaxLevel)*GuardDecay)); d != 0 {
		t.Fatalf("after %d quiet steps: %v, want forgotten", guardMaxLevel, d)
	}
	if d := g.Refused(ip, last.Add(time.Duration(guardMaxLevel)*GuardDecay)); d != 0 {
		t.Fatalf("the first refusal once forgotten: delayed %v", d)
	}
}

// The table is bounded: a flood of source addresses keeps at most its
// capacity, evicting the least recently refused; an address refused
// recently keeps its delay through the flood.
func TestGuardTableBounded(t *testing.T) {
	const capacity = 64
	g := NewGuard(capacity)
	hot := "203.0.113.9"
	for i := range GuardFree + 3 {
		g.Refused(hot, t0.Add(time.Duration(i)*time.Millisecond))
	}
	want := GuardDelay(3)
	for i := range 10 * capacity {
		now := t0.Add(10*time.Millisecond + time.Duration(i)*time.Microsecond)
		g.Refused(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), now)
		if i%(capacity/2) == 0 {
			if d := g.Refused(hot, now); d < want { // refused again: the most recent
				t.Fatalf("the address refused recently lost its delay in the flood: %v", d)
			}
		}
		if n := g.Len(); n > capacity {
			t.Fatalf("%d addresses held, capacity %d", n, capacity)
		}
	}
	if n := g.Len(); n != capacity {
		t.Fatalf("after the flood: %d addresses, want the capacity %d", n, capacity)
	}
	if _, held := g.m[guardKey("10.0.0.0")]; held {
		t.Fatal("the flood's first address, the least recently refused, is still held")
	}
	if _, held := g.m[guardKey(hot)]; !held {
		t.Fatal("the address refused most recently was evicted")
	}
	if NewGuard(0).entries != GuardEntries || GuardEntries != 4096 {
		t.Fatal("the default capacity is GuardEntries, 4096 (the README says so)")
	}
}

// IPv6 counts by /64: rotating addresses inside one /64 is one address;
// an IPv4-mapped address is its IPv4 one.
func TestGuardKeys(t *testing.T) {
	g := NewGuard(16)
	var d time.Duration
	for i := range GuardFree + 1 {
		d = g.Refused(fmt.Sprintf("2001:db8:1:2::%x", i+1), t0)
	}
	if d != GuardBase || g.Len() != 1 {
		t.Fatalf("%d addresses of one /64: delay %v, %d entries; want %v, 1", GuardFree+1, d, g.Len(), GuardBase)
	}
	if d := g.Refused("2001:db8:1:3::1", t0); d != 0 {
		t.Fatalf("another /64: delayed %v", d)
	}
	for range GuardFree {
		g.Refused("192.0.2.1", t0)
	}
	if d := g.Refused("::ffff:192.0.2.1", t0); d != GuardBase {
		t.Fatalf("the IPv4-mapped form of an address past its free refusals: %v, want %v", d, GuardBase)
	}
}
