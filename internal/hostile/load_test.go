package hostile

// The attacks that make the gateway hold bytes: requests sent without
// reading their answers, requests announced and never finished.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch is a record batch (v2, uncompressed) of n records of size bytes.
func batch(n, size int) []byte {
	var recs []byte
	val := make([]byte, size)
	for i := 0; i < n; i++ {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		r = binary.AppendVarint(r, -1)       // no key
		r = binary.AppendVarint(r, int64(size))
		r = append(r, val...)
		r = binary.AppendVarint(r, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	now := time.Now().UnixMilli()
	var tail []byte // from the attributes on: what the CRC covers
	tail = binary.BigEndian.AppendUint16(tail, 0)
	tail = binary.BigEndian.AppendUint32(tail, uint32(n-1))
	tail = binary.BigEndian.AppendUint64(tail, uint64(now))
	tail = binary.BigEndian.AppendUint64(tail, uint64(now))
	tail = binary.BigEndian.AppendUint64(tail, ^uint64(0)) // producer id -1
	tail = binary.BigEndian.AppendUint16(tail, 0xFFFF)     // epoch -1
	tail = binary.BigEndian.AppendUint32(tail, 0xFFFFFFFF) // sequence -1
	tail = binary.BigEndian.AppendUint32(tail, uint32(n))
	tail = append(tail, recs...)
	b := binary.BigEndian.AppendUint64(nil, 0)                    // base offset
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(tail))) // length
	b = binary.BigEndian.AppendUint32(b, 0)                       // leader epoch
	b = append(b, 2)                                              // magic
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(tail, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, tail...)
}

// produce is a Produce v7 (acks 1) of n records of size bytes to topic's
// partition p.
func produce(topic string, p int32, size, n int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = 1
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	part := kmsg.NewProduceRequestTopicPartition()
	part.Partition = p
	part.Records = batch(n, size)
	t.Partitions = append(t.Partitions, part)
	req.Topics = append(req.Topics, t)
	return req
}

// pipelines: two connections each send many requests (Metadata, then
// Produce of 64 KiB) without reading a byte, until the writes stop
// progressing (the gateway stopped reading) or all are sent; then they read
// every answer, which must come in order.
func pipelines(g *gateway, full bool) error {
	metas, prods := 500, 100
	if full {
		metas, prods = 2000, 200
	}
	return parallel(2, func(int) error { return pipeline(g, metas, prods) })
}

func pipeline(g *gateway, metas, prods int) error {
	r, err := dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
	if err != nil {
		return err
	}
	defer r.Close()
	_ = r.c.(*net.TCPConn).SetReadBuffer(16 << 10) // the kernel must not absorb the answers
	leader, err := leaderPort(g, r, 0)
	if err != nil {
		return err
	}
	if leader != g.base { // Produce goes to partition 0's leader
		r.Close()
		if r, err = dialAuthed(fmt.Sprintf("127.0.0.1:%d", leader), "acme-app", g.keys["acme-app"]); err != nil {
			return err
		}
		defer r.Close()
		_ = r.c.(*net.TCPConn).SetReadBuffer(16 << 10)
	}
	md, pr := metadata("orders"), produce("orders", 0, 64<<10, 1)
	var sent atomic.Int64
	wrote := make(chan error, 1)
	go func() {
		_ = r.c.SetWriteDeadline(time.Now().Add(2 * time.Minute))
		for i := 1; i <= metas+prods; i++ {
			var req kmsg.Request = md
			if i > metas {
				req = pr
			}
			if _, err := r.c.Write(frame(req, int32(i))); err != nil {
				wrote <- err
				return
			}
			sent.Add(1)
		}
		wrote <- nil
	}()
	stalled(&sent, wrote) // the most the gateway is made to hold
	for want := int32(1); want <= int32(metas+prods); want++ {
		got, _, err := r.next()
		if err != nil {
			return fmt.Errorf("answer %d of %d (%d sent): %w", want, metas+prods, sent.Load(), err)
		}
		if got != want {
			return fmt.Errorf("answer %d where %d was due", got, want)
		}
	}
	return <-wrote
}

// stalled waits until the writer is done (its result put back) or has
// sent nothing for 2 s.
func stalled(sent *atomic.Int64, wrote chan error) {
	last, since := int64(-1), time.Now()
	for time.Since(since) < 2*time.Second {
		select {
		case err := <-wrote:
			wrote <- err
			return
		case <-time.After(100 * time.Millisecond):
		}
		if n := sent.Load(); n != last {
			last, since = n, time.Now()
		}
	}
}

// leaderPort asks r's gateway for the leader of orders' partition p and
// returns the port the gateway gives it.
func leaderPort(g *gateway, r *raw, p int32) (int, error) {
	resp := kmsg.NewPtrMetadataResponse()
	if err := r.roundTrip(metadata("orders"), resp); err != nil {
		return 0, err
	}
	ports := map[int32]int32{}
	for _, b := range resp.Brokers {
		ports[b.NodeID] = b.Port
	}
	for _, t := range resp.Topics {
		for _, part := range t.Partitions {
			if part.Partition == p && t.ErrorCode == 0 {
				return int(ports[part.Leader]), nil
			}
		}
	}
	return 0, fmt.Errorf("no leader for orders[%d]", p)
}

// partialFrames: 24 connections of one principal each announce a Metadata
// request of announce bytes and send sent of them, never the rest; held
// until the writes stop progressing, then closed.
func partialFrames(announce, sent int) func(*gateway, bool) error {
	return func(g *gateway, _ bool) error {
		const conns = 24
		rs := make([]*raw, 0, conns)
		defer func() {
			for _, r := range rs {
				r.Close()
			}
		}()
		for i := 0; i < conns; i++ {
			r, err := dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			rs = append(rs, r)
		}
		head := frame(metadata("orders"), 1)[4:]
		part := make([]byte, sent)
		binary.BigEndian.PutUint32(part, uint32(announce))
		copy(part[4:], head)
		var written atomic.Int64
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = r.c.SetWriteDeadline(time.Now().Add(time.Minute))
				for off := 0; off < len(part); off += 64 << 10 {
					n, err := r.c.Write(part[off:min(off+64<<10, len(part))])
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
		done := make(chan error, 1)
		go func() { wg.Wait(); done <- nil }()
		stalled(&written, done)
		time.Sleep(time.Second) // a second of holding, sampled
		return nil
	}
}
