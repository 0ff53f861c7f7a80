package session

import "time"

// instant is a moment of the process's monotonic clock in 8 bytes, where
// a time.Time takes 24: a connection pair keeps eight of them, and an idle
// pair's memory counts (invariant 56). It is the nanoseconds since epoch,
// plus one; 0 is none, as a time.Time's zero.
type instant int64

// epoch is the package's start: its monotonic reading is every instant's.
var epoch = time.Now()

// instantOf is t as an instant; the zero time is none.
func instantOf(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	return instant(t.Sub(epoch)) + 1
}

// nowInstant is the instant now.
func nowInstant() instant { return instant(time.Since(epoch)) + 1 }

// IsZero reports none.
func (i instant) IsZero() bool { return i == 0 }

// Time is the instant as a time.Time, read against the clock now: now
// less the time since the instant, so that its wall reading agrees with
// now's however the wall clock was set since epoch (a span's start and
// end); none is the zero time.
func (i instant) Time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	now := time.Now()
	return now.Add(-i.age(now))
}

// age is the time from the instant to now.
func (i instant) age(now time.Time) time.Duration { return time.Duration(instantOf(now) - i) }
