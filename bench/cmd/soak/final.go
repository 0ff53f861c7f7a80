// The soak's end: the groups given time to read everything acknowledged,
// then the broker read directly (not through the gateway): a sentinel
// record written at the end of every partition, each topic read up to its
// sentinels (the events as written, the ledger read_committed), every
// record counted.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// drain waits until the groups have read every event acknowledged and
// every record of a committed transaction, drainFor at most; it reports
// whether they did.
func (sk *soak) drain() bool {
	deadline := time.Now().Add(sk.s.drainFor)
	for ; time.Now().Before(deadline); time.Sleep(time.Second) {
		if sk.unread() == 0 {
			return true
		}
	}
	return false
}

// unread counts what the groups have not read yet.
func (sk *soak) unread() int {
	b := sk.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for id := range b.acked {
		if b.read[id] == 0 {
			n++
		}
	}
	for txn, o := range b.txns {
		if o != committed {
			continue
		}
		for i := range b.txnSize[txn] {
			if b.ledger[txn<<8|uint64(i)] == 0 {
				n++
			}
		}
	}
	return n
}

// onBroker is what a direct read of the broker found: each record's count
// by id, and the events out of order in their partition.
type onBroker struct {
	events, ledger map[uint64]int
	outOfOrder     int
}

// final reads the broker directly.
func (sk *soak) final() (onBroker, error) {
	r := onBroker{events: map[uint64]int{}, ledger: map[uint64]int{}}
	var events, ledger []string
	for _, k := range sk.keys {
		events = append(events, k.tenant+"."+sk.s.eventsTopic)
		ledger = append(ledger, k.tenant+"."+sk.s.ledgerTopic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := sk.sentinels(ctx, append(append([]string{}, events...), ledger...)); err != nil {
		return r, err
	}
	last := map[string]uint64{}
	err := sk.readAll(ctx, events, kgo.ReadUncommitted(), func(rec *kgo.Record, id uint64) {
		r.events[id]++
		p := fmt.Sprintf("%s/%d", rec.Topic, rec.Partition)
		if prev, ok := last[p]; ok && id <= prev {
			r.outOfOrder++
		}
		last[p] = id
	})
	if err != nil {
		return r, err
	}
	err = sk.readAll(ctx, ledger, kgo.ReadCommitted(), func(_ *kgo.Record, id uint64) { r.ledger[id]++ })
	return r, err
}

// sentinels writes a sentinel record at the end of every partition of
// topics, on the broker directly.
func (sk *soak) sentinels(ctx context.Context, topics []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(sk.cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, t := range topics {
		for p := range sk.s.partitions {
			recs = append(recs, &kgo.Record{Topic: t, Partition: int32(p), Value: value(sentinel, 8)})
		}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// readAll reads topics from the start at isolation level iso until every
// partition's sentinel, handing each other record to each.
func (sk *soak) readAll(ctx context.Context, topics []string, iso kgo.IsolationLevel, each func(*kgo.Record, uint64)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(sk.cluster.ListenAddrs()...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	want := len(topics) * sk.s.partitions
	ended := map[string]bool{}
	for len(ended) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading the broker: %d of %d partitions read to their end: %w", len(ended), want, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			id, ok := idOf(r.Value)
			switch {
			case !ok:
			case id == sentinel:
				ended[fmt.Sprintf("%s/%d", r.Topic, r.Partition)] = true
			default:
				each(r, id)
			}
		})
	}
	return nil
}
