package codec

import "github.com/twmb/franz-go/pkg/kbin"

// FetchResponse rewrites a broker's Fetch response body (after the header)
// of the given version into w.Vec, as the answer to the client's
// correlation id: topic names mapped back by j (a topic outside the session
// is left out), session id 0, throttle_time_ms raised to at least
// throttleMs, unknown tagged fields dropped, the dropped topics of the
// request appended with their codes. Record batches are referenced, never
// copied.
func (w *Rewriter) FetchResponse(version int16, corr int32, body []byte, j FetchJudge, dropped *Dropped, throttleMs int32) error {
	w.names = w.names[:0]
	flex := version >= 12
	v := version
	if v < minFetchVersion || v > 12 {
		return ErrCodecVersion
	}
	r := rd{Reader: kbin.Reader{Src: body}, flex: flex}
	throttle := r.Int32()
	var errCode int16
	if v >= 7 {
		errCode = r.Int16()
		r.Int32() // session id
	}
	topicsStart := r.Src
	n, kept := w.judgeFetchAnswer(&r, v, j)
	r.tags()
	if !r.ok() {
		return ErrCodecShort
	}
	if len(r.Src) != 0 {
		return ErrCodecTrailing
	}
	w.BrokerThrottle = throttle
	if throttleMs > throttle {
		throttle = throttleMs
	}
	nd := 0
	if dropped != nil {
		nd = len(dropped.Topics)
	}

	w.Vec.Reset()
	w.Vec.Own = AppendResponseHeader(w.Vec.Own, 1, v, corr)
	w.Vec.Own = kbin.AppendInt32(w.Vec.Own, throttle)
	if v >= 7 {
		w.Vec.Own = kbin.AppendInt16(w.Vec.Own, errCode)
		w.Vec.Own = kbin.AppendInt32(w.Vec.Own, 0)
	}
	w.Vec.Own = appendArr(w.Vec.Own, flex, kept+nd)
	w.appendFetchAnswerTopics(topicsStart, v, n)
	if nd > 0 {
		w.Vec.Own = appendFetchDropped(w.Vec.Own, v, dropped)
	}
	w.Vec.Own = appendEmptyTags(w.Vec.Own, flex)
	return nil
}

// judgeFetchAnswer reads the n topics of a Fetch answer from r, their
// partitions checked, and keeps in w.names the client's name of each (nil
// for a topic outside the session, kept counts the others).
func (w *Rewriter) judgeFetchAnswer(r *rd, v int16, j FetchJudge) (n, kept int) {
	n = r.arr()
	for i := 0; i < n && r.ok(); i++ {
		phys := r.str()
		np := r.arr()
		for p := 0; p < np && r.ok(); p++ {
			readFetchRespPartition(r, v, nil)
		}
		r.tags()
		if !r.ok() {
			break
		}
		name, ok := j.ClientTopic(phys)
		if ok {
			kept++
			w.names = append(w.names, name)
		} else {
			w.names = append(w.names, nil)
		}
	}
	return n, kept
}

// appendFetchAnswerTopics writes to w.Vec the n topics of a Fetch answer
// (topics, from their count on, read whole by judgeFetchAnswer) that
// w.names keeps, renamed.
func (w *Rewriter) appendFetchAnswerTopics(topics []byte, v int16, n int) {
	flex := v >= 12
	r := rd{Reader: kbin.Reader{Src: topics}, flex: flex}
	r.arr()
	for i := 0; i < n; i++ {
		r.str()
		np := r.arr()
		keep := w.names[i] != nil
		if keep {
			w.Vec.Own = appendStr(w.Vec.Own, flex, w.names[i])
			w.Vec.Own = appendArr(w.Vec.Own, flex, np)
		}
		for p := 0; p < np; p++ {
			if keep {
				readFetchRespPartition(&r, v, &w.Vec)
			} else {
				readFetchRespPartition(&r, v, nil)
			}
		}
		r.tags()
		if keep {
			w.Vec.Own = appendEmptyTags(w.Vec.Own, flex)
		}
	}
}

// appendFetchDropped writes the topics the request left out (dropped may
// be nil), each partition answered with its topic's code.
func appendFetchDropped(o []byte, v int16, dropped *Dropped) []byte {
	if dropped == nil {
		return o
	}
	flex := v >= 12
	for i := range dropped.Topics {
		d := &dropped.Topics[i]
		o = appendStr(o, flex, d.Name)
		o = appendArr(o, flex, len(d.Partitions))
		for _, p := range d.Partitions {
			o = appendFetchErrPartition(o, v, p, d.Code)
		}
		o = appendEmptyTags(o, flex)
	}
	return o
}

// readFetchRespPartition reads one partition of a Fetch response and, when
// out is not nil, writes it there: fixed fields copied, aborted transactions
// re-encoded without tags, records referenced, only the known tags of v12
// (0 diverging epoch, 1 current leader, 2 snapshot id) kept.
func readFetchRespPartition(r *rd, v int16, out *Vec) {
	fixedLen := 4 + 2 + 8 + 8 // partition, error, high watermark, last stable offset
	if v >= 5 {
		fixedLen += 8 // log start offset
	}
	fixed := r.Span(fixedLen)
	var o []byte
	if out != nil {
		o = append(out.Own, fixed...)
	}
	// Aborted transactions: a nullable array.
	var na int
	null := false
	if r.flex {
		na = int(r.Uvarint()) - 1
	} else {
		na = int(r.Int32())
	}
	if na < 0 {
		null = true
		na = 0
	}
	if na > len(r.Src)/16 {
		r.Span(len(r.Src) + 1) // invalidate: cannot hold that many
		return
	}
	if out != nil {
		if null {
			if r.flex {
				o = append(o, 0)
			} else {
				o = kbin.AppendInt32(o, -1)
			}
		} else {
			o = appendArr(o, r.flex, na)
		}
	}
	for i := 0; i < na && r.ok(); i++ {
		a := r.Span(16)
		r.tags()
		if out != nil {
			o = append(o, a...)
			o = appendEmptyTags(o, r.flex)
		}
	}
	if v >= 11 {
		prr := r.Span(4)
		if out != nil {
			o = append(o, prr...)
		}
	}
	recs, rnull := r.nbytes()
	if out != nil {
		o = appendBytesLen(o, r.flex, len(recs), rnull)
		out.Own = o
		out.Ref(recs)
		o = out.Own
	}
	if r.flex {
		// Only the known tags of v12 cross, each re-encoded with an empty
		// tag section of its own: nothing unknown crosses, even nested.
		var keep [3]fetchTag
		nk := readKnownFetchTags(&r.Reader, &keep)
		if out != nil {
			o = appendKnownFetchTags(o, keep[:nk])
		}
	}
	if out != nil {
		out.Own = o
	}
}

// fetchTag is a known tagged field of a v12 Fetch answer's partition:
// its fixed-size value, without the nested tags it may carry.
type fetchTag struct {
	tag   uint32
	fixed []byte
}

// readKnownFetchTags reads a partition's tag section and keeps its known
// tags (at most 3, one of each); the unknown ones are skipped.
func readKnownFetchTags(r *kbin.Reader, keep *[3]fetchTag) int {
	nt := r.Uvarint()
	nk := 0
	for i := uint32(0); i < nt && r.Ok(); i++ {
		t := r.Uvarint()
		l := r.Uvarint()
		v := r.Span(int(l))
		fl := knownFetchTagFixed(t)
		if fl < 0 || len(v) < fl || nk == len(keep) {
			continue
		}
		keep[nk] = fetchTag{tag: t, fixed: v[:fl]}
		nk++
	}
	return nk
}

// appendKnownFetchTags writes the kept tags, each with an empty tag
// section of its own: nothing unknown crosses, even nested (D9).
func appendKnownFetchTags(o []byte, keep []fetchTag) []byte {
	o = kbin.AppendUvarint(o, uint32(len(keep)))
	for _, k := range keep {
		o = kbin.AppendUvarint(o, k.tag)
		o = kbin.AppendUvarint(o, uint32(len(k.fixed)+1))
		o = append(o, k.fixed...)
		o = append(o, 0)
	}
	return o
}

func appendFetchErrPartition(o []byte, v int16, part int32, code int16) []byte {
	flex := v >= 12
	o = kbin.AppendInt32(o, part)
	o = kbin.AppendInt16(o, code)
	o = kbin.AppendInt64(o, -1) // high watermark
	o = kbin.AppendInt64(o, -1) // last stable offset
	if v >= 5 {
		o = kbin.AppendInt64(o, -1) // log start offset
	}
	if flex { // aborted transactions: null
		o = append(o, 0)
	} else {
		o = kbin.AppendInt32(o, -1)
	}
	if v >= 11 {
		o = kbin.AppendInt32(o, -1) // preferred read replica
	}
	o = appendBytesLen(o, flex, 0, false)
	return appendEmptyTags(o, flex)
}

// knownFetchTagFixed is the size of the fixed fields of a known tagged
// structure of a v12 Fetch response partition, -1 for an unknown tag.
func knownFetchTagFixed(tag uint32) int {
	switch tag {
	case 0: // diverging epoch: epoch int32, end offset int64
		return 12
	case 1: // current leader: leader id int32, leader epoch int32
		return 8
	case 2: // snapshot id: end offset int64, epoch int32
		return 12
	}
	return -1
}
