package codec

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
)

// FetchJudge decides the names of one Fetch request and its response.
type FetchJudge interface {
	// FetchTopic returns the broker's name of the client's topic, or a
	// non-zero Kafka error code answering all its partitions.
	FetchTopic(name []byte) (physical []byte, code int16)
	// ClientTopic returns the client's name of a broker's topic; ok=false
	// for a name outside the session (it is then left out of the answer).
	ClientTopic(physical []byte) (name []byte, ok bool)
}

// FetchLimits bound what a forwarded Fetch may ask of the broker.
type FetchLimits struct {
	MaxWaitMs int32 // max_fetch_wait
	MaxBytes  int32 // the response bound (max_response_bytes / 2, less what the budget allows)
	// QuotaBytes (0: none) is what the quotas allow the whole answer: it is
	// split evenly over the partitions forwarded, each partition's
	// partition_max_bytes brought down to its share. The response bound is
	// left as it is: a broker that reaches it may leave the partitions
	// after out of its answer (kfake does; Apache Kafka lists them empty),
	// and a Java consumer throws away a full Fetch answer that lacks a
	// partition it asked for. A broker still gives one batch past the
	// bounds (KIP-74).
	QuotaBytes int32
}

// FetchInfo is what the forward path needs to know of a Fetch request.
type FetchInfo struct {
	MaxBytes   int32 // the response bound forwarded: the largest answer to reserve
	Partitions int   // partitions forwarded
	Kept       int   // topics forwarded
}

// minFetchVersion: before v4 a Fetch has no isolation level and answers
// message sets; the gateway announces Fetch from v4.
const minFetchVersion = 4

// fetchBounds are the wait and sizes a Fetch request asks of the broker.
type fetchBounds struct {
	maxWait, minBytes, maxBytes int32
	partMax                     int32 // each partition's partition_max_bytes at most (0: as asked)
}

// limit brings b down to lim, for a request forwarding partitions partitions.
func (b *fetchBounds) limit(lim FetchLimits, partitions int) {
	if lim.MaxWaitMs > 0 && (b.maxWait > lim.MaxWaitMs || b.maxWait < 0) {
		b.maxWait = lim.MaxWaitMs
	}
	if lim.MaxBytes > 0 && (b.maxBytes > lim.MaxBytes || b.maxBytes <= 0) {
		b.maxBytes = lim.MaxBytes
	}
	if b.minBytes > b.maxBytes {
		b.minBytes = b.maxBytes
	}
	if lim.QuotaBytes > 0 && partitions > 0 { // each partition's share of QuotaBytes
		b.partMax = max(lim.QuotaBytes/int32(partitions), 1)
		if all := b.partMax * int32(partitions); b.minBytes > all {
			b.minBytes = all // a long poll waits for no more than the shares hold
		}
	}
}

// FetchRequest rewrites a Fetch request (versions 4 to 12) into w.Vec: a
// consumer's request (ReplicaID -1), full (no incremental session: session
// id 0, epoch -1, no forgotten topics), its wait and size brought down to
// lim, topic names mapped by j. Left-out topics are in w.Dropped.
func (w *Rewriter) FetchRequest(h *RequestHeader, corr int32, clientID []byte, body []byte, j FetchJudge, lim FetchLimits) (FetchInfo, error) {
	var info FetchInfo
	w.resetScratch()
	flex := h.Flexible
	v := h.Version
	if v < minFetchVersion || v > 12 {
		return info, ErrCodecVersion
	}
	r := rd{Reader: kbin.Reader{Src: body}, flex: flex}
	r.Int32() // replica id: forced to -1
	var b fetchBounds
	b.maxWait = r.Int32()
	b.minBytes = r.Int32()
	b.maxBytes = r.Int32()
	iso := r.Int8()
	if v >= 7 {
		r.Int32() // session id
		r.Int32() // session epoch
	}
	topicsStart := r.Src
	n := w.judgeFetchRequest(&r, v, j, &info)
	if v >= 7 {
		skipForgottenTopics(&r)
	}
	var rack []byte
	if v >= 11 {
		rack = r.str()
	}
	r.tags()
	if !r.ok() {
		return info, ErrCodecShort
	}
	if len(r.Src) != 0 {
		return info, ErrCodecTrailing
	}
	b.limit(lim, info.Partitions)
	info.MaxBytes = b.maxBytes

	w.Vec.Reset()
	o := AppendRequestHeader(w.Vec.Own, h.Key, v, corr, clientID, h.ClientNull, flex)
	o = kbin.AppendInt32(o, -1)
	o = kbin.AppendInt32(o, b.maxWait)
	o = kbin.AppendInt32(o, b.minBytes)
	o = kbin.AppendInt32(o, b.maxBytes)
	o = kbin.AppendInt8(o, iso)
	if v >= 7 {
		o = kbin.AppendInt32(o, 0)
		o = kbin.AppendInt32(o, -1)
	}
	o = appendArr(o, flex, info.Kept)
	o = w.appendFetchRequestTopics(o, topicsStart, v, flex, n, b.partMax)
	if v >= 7 {
		o = appendArr(o, flex, 0)
	}
	if v >= 11 {
		o = appendStr(o, flex, rack)
	}
	o = appendEmptyTags(o, flex)
	w.Vec.Own = o
	return info, nil
}

// judgeFetchRequest reads the topics of a Fetch request from r, their
// partitions checked, and keeps in w.names and w.codes the judge's answer
// for each (the broker's name or a code); info counts the topics and
// partitions kept. It returns the number of topics.
func (w *Rewriter) judgeFetchRequest(r *rd, v int16, j FetchJudge, info *FetchInfo) int {
	fixed := fetchPartitionFixed(v)
	n := r.arr()
	for i := 0; i < n && r.ok(); i++ {
		name := r.str()
		np := r.arr()
		for p := 0; p < np && r.ok(); p++ {
			skipFetchPartition(r, fixed)
		}
		r.tags()
		if !r.ok() {
			break
		}
		phys, code := j.FetchTopic(name)
		w.names = append(w.names, phys)
		w.codes = append(w.codes, code)
		if code == 0 {
			info.Kept++
			info.Partitions += np
		}
	}
	return n
}

// skipForgottenTopics reads a Fetch request's forgotten topics (v7+):
// they are dropped, every Fetch forwarded is full.
func skipForgottenTopics(r *rd) {
	nf := r.arr()
	for i := 0; i < nf && r.ok(); i++ {
		r.str()
		np := r.arr()
		for p := 0; p < np && r.ok(); p++ {
			r.Int32()
		}
		r.tags()
	}
}

// appendFetchRequestTopics writes the n topics of a Fetch request (topics,
// from their count on, read whole by judgeFetchRequest) that the judge
// kept, renamed, each partition_max_bytes brought down to partMax (0:
// none); the others go to w.Dropped.
func (w *Rewriter) appendFetchRequestTopics(o, topics []byte, v int16, flex bool, n int, partMax int32) []byte {
	fixed := fetchPartitionFixed(v)
	r := rd{Reader: kbin.Reader{Src: topics}, flex: flex}
	r.arr()
	for i := 0; i < n; i++ {
		name := r.str()
		np := r.arr()
		keep := w.codes[i] == 0
		var d *DroppedTopic
		if keep {
			o = appendStr(o, flex, w.names[i])
			o = appendArr(o, flex, np)
		} else {
			d = w.Dropped.add(name, w.codes[i])
		}
		for p := 0; p < np; p++ {
			start := r.Src
			part := r.Int32()
			r.Src = start
			skipFetchPartition(&r, fixed)
			if !keep {
				d.Partitions = append(d.Partitions, part)
				continue
			}
			// Fixed-width fields are copied as they are; the partition's tag
			// section (unknown tags) is written empty.
			o = append(o, start[:fixed]...)
			if partMax > 0 { // partition_max_bytes, the last fixed field
				pm := o[len(o)-4:]
				if v := int32(binary.BigEndian.Uint32(pm)); v > partMax || v <= 0 {
					binary.BigEndian.PutUint32(pm, uint32(partMax))
				}
			}
			o = appendEmptyTags(o, flex)
		}
		r.tags()
		if keep {
			o = appendEmptyTags(o, flex)
		}
	}
	return o
}

// fetchPartitionFixed is the size of a Fetch request partition's fixed fields.
func fetchPartitionFixed(v int16) int {
	n := 4 + 8 + 4 // partition, fetch offset, partition max bytes
	if v >= 9 {
		n += 4 // current leader epoch
	}
	if v >= 12 {
		n += 4 // last fetched epoch
	}
	if v >= 5 {
		n += 8 // log start offset
	}
	return n
}

// skipFetchPartition reads a Fetch request partition: its fixed fields
// (fixed bytes, fetchPartitionFixed) and its tag section.
func skipFetchPartition(r *rd, fixed int) {
	r.Span(fixed)
	r.tags()
}
