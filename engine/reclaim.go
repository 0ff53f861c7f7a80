package engine

// Memory returned after a burst (issue 11.3: "RSS back near its idle level
// within a minute after they stop"). What a burst of large answers leaves
// behind is garbage and pooled chunks (engine/kernel's write queues, gnet's
// buffers of closed connections): an idle process allocates nothing, so no
// collection runs until Go's forced one, two minutes later, and a pool
// needs two collections to let go. The reclaimer, off the loops, looks at
// the process every reclaimEvery: when nothing is in flight (the replica's
// budget holds no byte, two looks in a row) and the memory Go holds from
// the OS has grown by reclaimGrowth since the last return, it collects
// twice and gives the free pages back (debug.FreeOSMemory). A busy gateway
// is left to Go's own pacing; a steady idle one is never touched twice.
// Requests read and not handled are memory too (issue 33.1: a tenant's
// partial frames): when what they held falls to a quarter of its peak
// since the last return, the same is done even with answers in flight
// elsewhere (their reservations are not memory).

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	reclaimEvery  = 2 * time.Second
	reclaimGrowth = 4 << 20
)

// heldFromOS is the memory the Go runtime maps and has not released to the
// OS: what the process's RSS follows (binary and C parts aside).
func heldFromOS(s []metrics.Sample) uint64 {
	metrics.Read(s)
	total, released := s[0].Value.Uint64(), s[1].Value.Uint64()
	if released > total {
		return 0
	}
	return total - released
}

// reclaim runs until stop is closed.
func (e *Engine) reclaim(stop <-chan struct{}) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	base := heldFromOS(s)
	quiet := 0
	var reqPeak int64
	t := time.NewTicker(reclaimEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		req := e.env.Bounds.Requests.Used()
		reqPeak = max(reqPeak, req)
		requestsGone := reqPeak >= reclaimGrowth && req <= reqPeak/4
		if requestsGone {
			reqPeak = req // one look for one fall
		}
		switch {
		case e.env.Bounds.Replica.Used() != 0:
			quiet = 0
			if !requestsGone {
				continue
			}
		case !requestsGone:
			if quiet++; quiet < 2 {
				continue
			}
		}
		held := heldFromOS(s)
		if held < base {
			base = held // Go returned some by itself: the new floor
			continue
		}
		if held-base < reclaimGrowth {
			continue
		}
		runtime.GC() // pooled chunks move to the pools' victim caches
		debug.FreeOSMemory()
		after := heldFromOS(s)
		e.log.Debug("flexway returned memory to the OS", "held_before", held, "held_after", after)
		base = after
	}
}
