// The soak's writers: a tenant's idempotent producer (acks=all, the
// library's defaults: unlimited retries) paced at a rate, and its
// transactional producer writing small transactions, one in ten aborted
// on purpose; each books what was acknowledged, committed or aborted.
package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// flushFor bounds a producer's flush at a restart or at the run's end.
const flushFor = 2 * time.Minute

// produceLoop writes events to topic at rate records/s, size bytes each,
// until ctx ends; at a restart asked on l, and at the end, it flushes and
// closes its client. Ids continue across restarts: seq is the tenant's.
func produceLoop(ctx context.Context, f clientFactory, l loop, b *books, tenant int, topic string, rate, size int) {
	var seq uint64
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for ctx.Err() == nil {
		cl, err := f.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			b.err("produce", err)
			return
		}
		for again := true; again; {
			select {
			case <-ctx.Done():
				again = false
			case <-l.restart:
				b.mu.Lock()
				b.restarts++
				b.mu.Unlock()
				again = false
			case <-tick.C:
				id := recordID(tenant, seq)
				seq++
				b.mu.Lock()
				b.sent++
				b.pending++
				b.mu.Unlock()
				cl.TryProduce(context.Background(), &kgo.Record{Value: value(id, size)}, func(_ *kgo.Record, err error) {
					b.mu.Lock()
					defer b.mu.Unlock()
					b.pending--
					if err != nil {
						b.countErr("produce", err)
						return
					}
					b.acked[id] = true
					b.lastAcked = time.Now()
				})
			}
		}
		fctx, cancel := context.WithTimeout(context.Background(), flushFor)
		if err := cl.Flush(fctx); err != nil {
			b.err("produce flush", err)
		}
		cancel()
		cl.Close() // what is still buffered fails: never acknowledged
	}
}

// Each transaction holds txnRecords records; one in abortEvery is aborted
// on purpose.
const (
	txnRecords = 5
	abortEvery = 10
)

// txnLoop writes a transaction to topic every period until ctx ends. A
// failure closes the client and starts a new one (whose InitProducerId
// ends what the old one left open); so does a restart asked on l.
func txnLoop(ctx context.Context, f clientFactory, l loop, b *books, tenant int, topic string, period time.Duration, size int) {
	var n uint64
	tick := time.NewTicker(period)
	defer tick.Stop()
	for ctx.Err() == nil {
		cl, err := f.client(kgo.DefaultProduceTopic(topic), kgo.TransactionalID("ledger"))
		if err != nil {
			b.err("txn", err)
			return
		}
		for ok := true; ok; {
			select {
			case <-ctx.Done():
				ok = false
			case <-l.restart:
				b.mu.Lock()
				b.restarts++
				b.mu.Unlock()
				ok = false
			case <-tick.C:
				n++
				ok = oneTxn(cl, b, tenant, n, size)
			}
		}
		cl.Close()
	}
}

// oneTxn writes transaction n and ends it, booking its outcome; false
// means the client must be replaced.
func oneTxn(cl *kgo.Client, b *books, tenant int, n uint64, size int) bool {
	key := recordID(tenant, n<<8) >> 8
	if err := cl.BeginTransaction(); err != nil {
		b.err("txn begin", err)
		return false
	}
	b.mu.Lock()
	b.txns[key], b.txnSize[key] = inDoubt, txnRecords
	b.mu.Unlock()
	failed := make(chan error, txnRecords)
	for i := range txnRecords {
		r := &kgo.Record{Value: value(key<<8|uint64(i), size)}
		cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed <- err
			}
		})
	}
	fctx, cancel := context.WithTimeout(context.Background(), flushFor)
	defer cancel()
	ferr := cl.Flush(fctx)
	commit := ferr == nil && len(failed) == 0 && n%abortEvery != 0
	for len(failed) > 0 {
		b.err("txn produce", <-failed)
	}
	if ferr != nil {
		b.err("txn flush", ferr)
	}
	end, want := kgo.TryCommit, committed
	if !commit {
		end, want = kgo.TryAbort, aborted
		if err := cl.AbortBufferedRecords(fctx); err != nil {
			b.err("txn abort buffered", err)
			return false
		}
	}
	if err := cl.EndTransaction(fctx, end); err != nil {
		b.err("txn end", err)
		return false // in doubt: the next client's InitProducerId settles it
	}
	b.mu.Lock()
	b.txns[key] = want
	b.mu.Unlock()
	return true
}
