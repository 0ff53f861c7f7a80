package quota

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// slowStore's counters are read from the store once ready is set (Ready),
// and carry a bucket's clock (Clocked): learned is raised into it at Watch.
type slowStore struct {
	ready   atomic.Bool
	learned int64
}

type slowCounter struct {
	fakeCounter
	s *slowStore
}

func (s *slowStore) Counter(string, Window) Counter { return &slowCounter{s: s} }
func (s *slowStore) Close() error                   { return nil }
func (c *slowCounter) Ready() bool                  { return c.s.ready.Load() }
func (c *slowCounter) Watch(tat *atomic.Int64)      { RaiseClock(tat, c.s.learned) }

// Issue 34.5: on a replica with a shared store, a principal's first
// request waits for its buckets' first read (the waits double from 1 ms,
// none past what is left of the bound), not a moment longer once read; a
// read that never lands holds it FirstReadWait exactly (or max_throttle,
// if shorter), then it goes on and a line says so, once a minute.
func TestPrincipalFirstReadWait(t *testing.T) {
	var logs bytes.Buffer
	l := &Limits{Window: time.Second, MaxThrottle: 10 * time.Second}
	l.Client[ProduceBytes] = 1 << 20

	st := &slowStore{}
	r := NewRegistry(st, nil)
	r.Log = slog.New(slog.NewTextHandler(&logs, nil))
	p := r.Acquire("acme", "plain:a", t0)
	for _, c := range []struct {
		at, want time.Duration
	}{
		{0, time.Millisecond}, {time.Millisecond, time.Millisecond}, {8 * time.Millisecond, 8 * time.Millisecond},
		{300 * time.Millisecond, FirstReadWait - 300*time.Millisecond},
		{FirstReadWait - time.Nanosecond, time.Nanosecond},
	} {
		// Owed waits for the read whatever the kind, bounded or not.
		for k := range NumKinds {
			if got := p.Owed(k, t0.Add(c.at), l); got != c.want {
				t.Errorf("%s owed %v after %v unread: want %v", KindNames[k], got, c.at, c.want)
			}
		}
	}
	if logs.Len() != 0 {
		t.Errorf("a line before the bound: %s", logs.String())
	}
	if got := p.Owed(ProduceBytes, t0.Add(FirstReadWait), l); got != 0 {
		t.Errorf("at the bound: owed %v, want 0 (decided on this replica's buckets)", got)
	}
	const line = "quota buckets not yet read from the shared counter store"
	if n := strings.Count(logs.String(), line); n != 1 || !strings.Contains(logs.String(), "tenant=acme") {
		t.Errorf("the line at the bound, once, naming the tenant: %q", logs.String())
	}
	q := r.Acquire("acme", "plain:b", t0)
	q.Owed(Requests, t0.Add(FirstReadWait), l)
	if n := strings.Count(logs.String(), line); n != 1 {
		t.Errorf("a second late read within the minute logged again: %d lines", n)
	}

	// max_throttle below FirstReadWait bounds the wait instead.
	l.MaxThrottle = 100 * time.Millisecond
	c := r.Acquire("acme", "plain:c", t0)
	if got := c.Owed(Requests, t0.Add(99*time.Millisecond), l); got != time.Millisecond {
		t.Errorf("1 ms before max_throttle: owed %v, want 1ms", got)
	}
	if got := c.Owed(Requests, t0.Add(100*time.Millisecond), l); got != 0 {
		t.Errorf("at max_throttle: owed %v, want 0", got)
	}

	// Read: no wait at once, and the debt another replica left is owed.
	st.ready.Store(true)
	st.learned = t0.Add(3 * time.Second).UnixNano() // 3 s spent ahead, a 1 s depth: 2 s owed
	d := r.Acquire("acme", "plain:d", t0)
	if got := d.Owed(ProduceBytes, t0, l); got != 2*time.Second {
		t.Errorf("read, 2 s owed elsewhere: owed %v, want 2s", got)
	}
	if got := d.Owed(Requests, t0, l); got != 0 {
		t.Errorf("read, nothing owed for requests: owed %v", got)
	}
}

// Without a shared store, nothing waits.
func TestPrincipalAloneNoFirstRead(t *testing.T) {
	r := NewRegistry(nil, nil)
	l := &Limits{Window: time.Second, MaxThrottle: time.Second}
	l.Client[Requests] = 100
	if got := r.Acquire("acme", "plain:a", t0).Owed(Requests, t0, l); got != 0 {
		t.Errorf("alone: owed %v", got)
	}
}
