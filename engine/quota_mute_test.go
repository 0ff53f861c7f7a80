package engine

// KIP-219's silence kept in place (issue 22.7, invariant 33): a muted
// client's socket stays enrolled while what it sent unhandled stays under
// muteInPlace; past it, its reads pause (conn.Quota) as any other pause.

import (
	"testing"
	"time"

	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/session"
)

// A client that honours its throttle sends nothing while muted: its socket
// is not detached (no pause, no re-enrolment on the loop). One that sends
// on has at most muteInPlace and one read held, then is paused; every
// request it sent is answered, in order, once the silence ends.
func TestQuotaMuteInPlaceBounded(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 1MiB }\n      window: 1s\n")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	cl := clientOf(t, env.e, r)
	pauses0 := env.e.env.Flow.Detaches.Get()

	r.send(rawProduce(5 << 19)) // 1.5 MiB past the bucket: 1.5 s
	a := produceAnswer()
	r.recv(a)
	if a.ThrottleMillis < 1000 {
		t.Fatalf("throttle_time_ms = %d, want about 1500", a.ThrottleMillis)
	}
	var st session.State
	var attached, paused bool
	onLoopOf(t, cl, func() {
		st, attached, paused = cl.State(), stateOf(cl.Conn()) == rpAttached, cl.Conn().PausedFor(conn.Quota)
	})
	if !st.QuotaMuted || !attached || paused || env.e.env.Flow.Detaches.Get() != pauses0 {
		t.Fatalf("a muted client that sends nothing: muted %v, attached %v, paused for the quota %v, read pauses +%d; want muted, attached, no pause",
			st.QuotaMuted, attached, paused, env.e.env.Flow.Detaches.Get()-pauses0)
	}

	// It sends on while muted: 4 × 128 KiB, past muteInPlace (256 KiB).
	const n = 4
	for i := 0; i < n; i++ {
		r.send(rawProduce(128 << 10))
	}
	waitUntil(t, 10*time.Second, "the muted client paused once past what it may have unhandled", func() bool {
		var p bool
		onLoopOf(t, cl, func() { p = cl.Conn().PausedFor(conn.Quota) && stateOf(cl.Conn()) == rpPaused })
		return p
	})
	var held int
	onLoopOf(t, cl, func() { held = cl.Conn().Stashed() })
	if bound := session.MuteInPlace + env.e.opts.ReadBufferCap; held > bound {
		t.Fatalf("%d bytes held for a paused muted client, bound %d (muteInPlace and one read)", held, bound)
	}
	for i := 0; i < n; i++ { // answered, in order, once the silence ends
		a := produceAnswer()
		r.recv(a)
		if len(a.Topics) != 1 || a.Topics[0].Topic != "orders" {
			t.Fatalf("answer %d: %+v", i, a.Topics)
		}
	}
	t.Logf("held %d bytes while paused; read pauses +%d", held, env.e.env.Flow.Detaches.Get()-pauses0)
}
