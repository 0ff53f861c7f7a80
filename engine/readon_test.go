package engine

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"
)

// Issue 35.1 (engine/conn/readon.go): gnet reads 16 KiB of a socket, so
// that a large Produce's records stay in it to be spliced. A client that
// pipelines requests with small partitions (the Java producer's 16 KiB
// batches, several requests in flight) has what its socket holds read on
// in one call of the event, within its budgets, not one traffic event per
// 16 KiB: 32 requests of 12 KiB written at once (384 KiB, 24 reads of
// gnet's) take a few events, each request is answered in order, and
// every record is on the broker intact and in order. With reading on off
// (WithReadOnCap(0)) the same requests take at least 24 events.
func TestReadOnTakesPipelinedRequests(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     []Option
		min, max int64
	}{
		{"read on", nil, 1, 12},
		{"gnet's reads alone", []Option{WithReadOnCap(0)}, 24, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTestEnv(t, "", c.opts...)
			r := leaderConn(t, env)
			_ = r.c.(*net.TCPConn).SetWriteBuffer(4 << 20)
			var events atomic.Int64
			hook := func(*session.Client) { events.Add(1) }
			env.e.env.Hooks.Traffic.Store(&hook)

			const n = 32
			var vals [][]byte
			var all []byte
			for i := 0; i < n; i++ {
				v := recordValue(i, 12<<10)
				vals = append(vals, v)
				all = append(all, rawProduceFrame(r, "orders", -1, batchOf(v))...)
			}
			before := events.Load()
			_ = r.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := r.c.Write(all); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				produceAnswered(t, r, i)
			}
			got := events.Load() - before
			t.Logf("%d requests of 12 KiB (%d KiB) written at once: %d traffic events of the client", n, len(all)>>10, got)
			if got < c.min || got > c.max {
				t.Errorf("%d traffic events, want %d to %d", got, c.min, c.max)
			}
			consumeValues(t, env, vals)
			// The read-on buffer is the loop's: nothing of it stays with the
			// connection once its requests are through.
			var kept atomic.Int64
			onLoops(t, env.e, func(l *session.Loop) {
				for cl := range l.Clients() {
					kept.Add(int64(cl.Conn().Stashed()))
				}
			})
			if kept := kept.Load(); kept != 0 {
				t.Errorf("%d bytes stashed after every request was answered", kept)
			}
		})
	}
}
