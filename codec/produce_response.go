package codec

import "github.com/twmb/franz-go/pkg/kbin"

// BrokerNamer renames a broker for the client (implemented by decide's Brokers).
type BrokerNamer interface {
	Advertise(nodeID int32) (host string, port int32)
}

// ProduceResponse rewrites a broker's Produce answer body (versions 0 to
// 12) into w.Vec as the answer to the client's correlation id: topic names
// mapped back by j (a topic outside the session is left out), the broker's
// words (error messages, record error messages) dropped, the current
// leader tag kept without nested unknown tags, node endpoints renamed by b,
// every other tagged field dropped, and the request's dropped topics
// appended with their codes, throttle_time_ms raised to at least
// throttleMs (the broker's is kept in w.BrokerThrottle). It replaces a kmsg decode, a reflective scrub
// and an encode on the hottest answer.
func (w *Rewriter) ProduceResponse(version int16, corr int32, body []byte, j FetchJudge, b BrokerNamer, dropped *Dropped, throttleMs int32) error {
	w.names = w.names[:0]
	v := version
	if v < 0 || v > 12 {
		return ErrCodecVersion
	}
	flex := v >= 9
	r := rd{Reader: kbin.Reader{Src: body}, flex: flex}
	topicsStart := r.Src
	n, kept := w.judgeProduceAnswer(&r, v, j)
	var throttle int32
	if v >= 1 {
		throttle = r.Int32()
	}
	w.BrokerThrottle = throttle
	if throttleMs > throttle {
		throttle = throttleMs
	}
	tagsStart := r.Src
	if flex {
		skipTags(&r.Reader)
	}
	if !r.ok() {
		return ErrCodecShort
	}
	if len(r.Src) != 0 {
		return ErrCodecTrailing
	}
	nd := 0
	if dropped != nil {
		nd = len(dropped.Topics)
	}

	w.Vec.Reset()
	o := AppendResponseHeader(w.Vec.Own, 0, v, corr)
	o = appendArr(o, flex, kept+nd)
	o = w.appendProduceAnswerTopics(o, topicsStart, v, n)
	if nd > 0 {
		o = appendProduceDropped(o, v, dropped)
	}
	if v >= 1 {
		o = kbin.AppendInt32(o, throttle)
	}
	if flex {
		o = appendProduceRespTags(o, tagsStart, b)
	}
	w.Vec.Own = o
	return nil
}

// judgeProduceAnswer reads the n topics of a Produce answer from r, their
// partitions checked, and keeps in w.names the client's name of each (nil
// for a topic outside the session, kept counts the others).
func (w *Rewriter) judgeProduceAnswer(r *rd, v int16, j FetchJudge) (n, kept int) {
	n = r.arr()
	for i := 0; i < n && r.ok(); i++ {
		phys := r.str()
		np := r.arr()
		for p := 0; p < np && r.ok(); p++ {
			readProducePartition(r, v, nil)
		}
		r.tags()
		if !r.ok() {
			break
		}
		name, ok := j.ClientTopic(phys)
		if ok && name != nil {
			kept++
			w.names = append(w.names, name)
		} else {
			w.names = append(w.names, nil)
		}
	}
	return n, kept
}

// appendProduceAnswerTopics appends the n topics of a Produce answer
// (topics, from their count on, read whole by judgeProduceAnswer) that
// w.names keeps, renamed.
func (w *Rewriter) appendProduceAnswerTopics(o, topics []byte, v int16, n int) []byte {
	flex := v >= 9
	r := rd{Reader: kbin.Reader{Src: topics}, flex: flex}
	r.arr()
	for i := 0; i < n; i++ {
		r.str()
		np := r.arr()
		keep := w.names[i] != nil
		if keep {
			o = appendStr(o, flex, w.names[i])
			o = appendArr(o, flex, np)
		}
		for p := 0; p < np; p++ {
			if keep {
				o = readProducePartition(&r, v, o)
			} else {
				readProducePartition(&r, v, nil)
			}
		}
		r.tags()
		if keep {
			o = appendEmptyTags(o, flex)
		}
	}
	return o
}

// appendProduceDropped appends the topics the request left out (dropped
// may be nil), each partition answered with its topic's code.
func appendProduceDropped(o []byte, v int16, dropped *Dropped) []byte {
	if dropped == nil {
		return o
	}
	flex := v >= 9
	for i := range dropped.Topics {
		d := &dropped.Topics[i]
		o = appendStr(o, flex, d.Name)
		o = appendArr(o, flex, len(d.Partitions))
		for _, p := range d.Partitions {
			o = kbin.AppendInt32(o, p)
			o = kbin.AppendInt16(o, d.Code)
			o = kbin.AppendInt64(o, -1) // base offset
			if v >= 2 {
				o = kbin.AppendInt64(o, -1) // log append time
			}
			if v >= 5 {
				o = kbin.AppendInt64(o, -1) // log start offset
			}
			if v >= 8 {
				o = appendArr(o, flex, 0)             // record errors
				o = appendNullStr(o, flex, nil, true) // error message
			}
			o = appendEmptyTags(o, flex)
		}
		o = appendEmptyTags(o, flex)
	}
	return o
}

// readProducePartition reads one partition of a Produce answer and, when
// o is not nil, appends it without the broker's words and unknown tags.
func readProducePartition(r *rd, v int16, o []byte) []byte {
	fixed := 4 + 2 + 8 // index, error code, base offset
	if v >= 2 {
		fixed += 8 // log append time
	}
	if v >= 5 {
		fixed += 8 // log start offset
	}
	f := r.Span(fixed)
	if o != nil {
		o = append(o, f...)
	}
	if v >= 8 {
		ne := r.arr()
		if ne > len(r.Src)/5 {
			r.Span(len(r.Src) + 1)
			return o
		}
		if o != nil {
			o = appendArr(o, r.flex, ne)
		}
		for i := 0; i < ne && r.ok(); i++ {
			idx := r.Span(4)
			r.str() // batch index error message: the broker's words
			r.tags()
			if o != nil {
				o = append(o, idx...)
				o = appendNullStr(o, r.flex, nil, true)
				o = appendEmptyTags(o, r.flex)
			}
		}
		r.str() // error message: the broker's words
		if o != nil {
			o = appendNullStr(o, r.flex, nil, true)
		}
	}
	if r.flex {
		// Tag 0, current leader (v10+): leader id, leader epoch; kept
		// without its own nested tags. Every other tag is dropped.
		nt := r.Uvarint()
		var leader []byte
		for i := uint32(0); i < nt && r.ok(); i++ {
			t := r.Uvarint()
			l := r.Uvarint()
			val := r.Span(int(l))
			if t == 0 && len(val) >= 8 {
				leader = val[:8]
			}
		}
		if o != nil {
			if leader != nil {
				o = append(o, 1, 0, 9)
				o = append(o, leader...)
				o = append(o, 0)
			} else {
				o = append(o, 0)
			}
		}
	}
	return o
}

// appendProduceRespTags re-encodes the top-level tags of a Produce answer:
// tag 0, node endpoints (v10+), with every broker renamed; others dropped.
func appendProduceRespTags(o, src []byte, b BrokerNamer) []byte {
	r := kbin.Reader{Src: src}
	nt := r.Uvarint()
	var nodes []byte
	for i := uint32(0); i < nt && r.Ok(); i++ {
		t := r.Uvarint()
		l := r.Uvarint()
		val := r.Span(int(l))
		if t == 0 {
			nodes = val
		}
	}
	if nodes == nil || b == nil {
		return append(o, 0)
	}
	// Encode the renamed endpoints into the tag's value.
	nr := rd{Reader: kbin.Reader{Src: nodes}, flex: true}
	cnt := nr.arr()
	var val []byte
	kept := 0
	var body []byte
	for i := 0; i < cnt && nr.ok(); i++ {
		id := nr.Int32()
		nr.str()   // host
		nr.Int32() // port
		nr.str()   // rack
		nr.tags()
		if !nr.ok() {
			break
		}
		host, port := b.Advertise(id)
		body = kbin.AppendInt32(body, id)
		body = appendStr(body, true, []byte(host))
		body = kbin.AppendInt32(body, port)
		body = append(body, 0) // rack: null
		body = append(body, 0) // tags
		kept++
	}
	val = appendArr(val, true, kept)
	val = append(val, body...)
	o = append(o, 1, 0)
	o = kbin.AppendUvarint(o, uint32(len(val)))
	return append(o, val...)
}
