package codec

import "github.com/twmb/franz-go/pkg/kbin"

// ProduceJudge decides the names of one Produce request (implemented by decide).
type ProduceJudge interface {
	// ProduceTopic (whose answer must stay valid until the rewrite returns) returns the broker's name of the client's topic, or a
	// non-zero Kafka error code answering all its partitions (the topic is
	// then left out of the forwarded request).
	ProduceTopic(name []byte) (physical []byte, code int16)
	// TxnID returns the broker's transactional id for the client's.
	TxnID(id []byte) []byte
}

// ProduceInfo is what the forward path needs to know of a Produce request.
type ProduceInfo struct {
	Acks          int16
	Kept          int // topics forwarded
	Transactional bool
	Bytes         int // record bytes forwarded (quotas)
}

// Produce rewrites a Produce request (versions 0 to 12) into w.Vec: the
// header with the new correlation id and client id, topic names and the
// transactional id mapped by j, the record batches referenced, never
// decoded nor copied. Left-out topics are in w.Dropped.
func (w *Rewriter) Produce(h *RequestHeader, corr int32, clientID []byte, body []byte, j ProduceJudge) (ProduceInfo, error) {
	var info ProduceInfo
	w.resetScratch()
	flex := h.Flexible
	v := h.Version
	if v < 0 || v > 12 {
		return info, ErrCodecVersion
	}
	r := rd{Reader: kbin.Reader{Src: body}, flex: flex}

	// Pre-pass: judge every topic, so the forwarded count is known before
	// it is written (a compact array's length has no fixed width).
	var txn []byte
	txnNull := true
	if v >= 3 {
		txn = r.str()
		txnNull = txn == nil
		if !r.ok() {
			return info, ErrCodecShort
		}
	}
	info.Acks = r.Int16()
	timeout := r.Int32()
	topicsStart := r.Src
	n := w.judgeProduceTopics(&r, j, &info)
	r.tags()
	if !r.ok() {
		return info, ErrCodecShort
	}
	if len(r.Src) != 0 {
		return info, ErrCodecTrailing
	}

	// Emit.
	w.Vec.Reset()
	o := AppendRequestHeader(w.Vec.Own, h.Key, v, corr, clientID, h.ClientNull, flex)
	if v >= 3 {
		if !txnNull {
			info.Transactional = true
			tid := j.TxnID(txn)
			if len(tid) > MaxString {
				return info, ErrCodecTooLong
			}
			o = appendStr(o, flex, tid)
		} else {
			o = appendNullStr(o, flex, nil, true)
		}
	}
	o = kbin.AppendInt16(o, info.Acks)
	o = kbin.AppendInt32(o, timeout)
	o = appendArr(o, flex, info.Kept)
	w.Vec.Own = o
	info.Bytes = w.appendProduceTopics(topicsStart, flex, n)
	w.Vec.Own = appendEmptyTags(w.Vec.Own, flex)
	return info, nil
}

// judgeProduceTopics reads the topics of a Produce request from r, their
// partitions checked, and keeps in w.names and w.codes the judge's answer
// for each (the broker's name or a code); info counts the topics kept. It
// returns the number of topics.
func (w *Rewriter) judgeProduceTopics(r *rd, j ProduceJudge, info *ProduceInfo) int {
	n := r.arr()
	for i := 0; i < n && r.ok(); i++ {
		name := r.str()
		np := r.arr()
		for p := 0; p < np && r.ok(); p++ {
			r.Int32()
			r.nbytes()
			r.tags()
		}
		r.tags()
		if !r.ok() {
			break
		}
		phys, code := j.ProduceTopic(name)
		w.names = append(w.names, phys)
		w.codes = append(w.codes, code)
		if code == 0 {
			info.Kept++
		}
	}
	return n
}

// appendProduceTopics writes to w.Vec the n topics of a Produce request
// (topics, from their count on, read whole by judgeProduceTopics) that the
// judge kept, renamed, their record batches referenced; the others go to
// w.Dropped. It returns the record bytes forwarded.
func (w *Rewriter) appendProduceTopics(topics []byte, flex bool, n int) int {
	forwarded := 0
	r := rd{Reader: kbin.Reader{Src: topics}, flex: flex}
	r.arr()
	for i := 0; i < n; i++ {
		name := r.str()
		np := r.arr()
		keep := w.codes[i] == 0
		var d *DroppedTopic
		if keep {
			w.Vec.Own = appendStr(w.Vec.Own, flex, w.names[i])
			w.Vec.Own = appendArr(w.Vec.Own, flex, np)
		} else {
			d = w.Dropped.add(name, w.codes[i])
		}
		for p := 0; p < np; p++ {
			part := r.Int32()
			recs, null := r.nbytes()
			r.tags()
			if !keep {
				d.Partitions = append(d.Partitions, part)
				continue
			}
			w.Vec.Own = kbin.AppendInt32(w.Vec.Own, part)
			w.Vec.Own = appendBytesLen(w.Vec.Own, flex, len(recs), null)
			w.Vec.Ref(recs)
			w.Vec.Own = appendEmptyTags(w.Vec.Own, flex)
			forwarded += len(recs)
		}
		r.tags()
		if keep {
			w.Vec.Own = appendEmptyTags(w.Vec.Own, flex)
		}
	}
	return forwarded
}
