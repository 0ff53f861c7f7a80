package counters

import (
	"time"

	"github.com/flexway/flexway/quota"
)

// A window's number: the count of days since the Unix epoch, in UTC, or
// year*12+month-1 (month). Each window is a Redis key. (A Running counter
// has no window: one Redis hash, running.go.)

const secondsPerDay = 86400

// windowOf is the number of the window of kind k that holds now. It
// allocates nothing (the hot path calls it).
func windowOf(k quota.Window, now time.Time) int64 {
	switch k {
	case quota.Month:
		y, m, _ := now.UTC().Date()
		return int64(y)*12 + int64(m) - 1
	default: // quota.Day
		s := now.Unix()
		d := s / secondsPerDay
		if s < 0 && s%secondsPerDay != 0 {
			d--
		}
		return d
	}
}

// windowEnd is the first instant after window w.
func windowEnd(k quota.Window, w int64) time.Time {
	switch k {
	case quota.Month:
		return time.Date(int(w/12), time.Month(w%12+1), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	default:
		return time.Unix((w+1)*secondsPerDay, 0).UTC()
	}
}

// keyGrace is how long a window's key outlives its window: a little
// longer, so that a replica late by a sync (or a clock skewed by a little)
// still adds to the window's key, and then Redis forgets it.
func keyGrace(k quota.Window) time.Duration {
	switch k {
	case quota.Month:
		return 24 * time.Hour
	default:
		return time.Hour
	}
}

// windowKey is the Redis key of window w of the counter name:
// flexway:<name>:day:2026-12-03, flexway:<name>:month:2026-12.
func windowKey(name string, k quota.Window, w int64) string {
	switch k {
	case quota.Month:
		return "flexway:" + name + ":month:" + time.Date(int(w/12), time.Month(w%12+1), 1, 0, 0, 0, 0, time.UTC).Format("2006-01")
	default:
		return "flexway:" + name + ":day:" + time.Unix(w*secondsPerDay, 0).UTC().Format("2006-01-02")
	}
}
