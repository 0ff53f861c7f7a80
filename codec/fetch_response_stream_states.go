package codec

import (
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The states of a FetchResponseStream, one method each: every one takes
// the whole unit of its state from the bytes fed (or nothing while the unit
// is not yet whole), appends it rewritten, and moves to the next state.

// short decides what a unit that did not parse from avail means: more
// bytes are needed (0, nil), or the frame is malformed or the unit too long.
func (s *FetchResponseStream) short(avail []byte) (int, error) { return shortUnit(avail, s.remain) }

// count reads an array count as rd.arr does, its bound checked against
// the frame's remaining bytes (as kbin checks it against the whole body).
func (s *FetchResponseStream) count(r *kbin.Reader, start int) (int, bool) {
	var c int32
	if s.flex {
		c = int32(r.Uvarint()) - 1
	} else {
		c = r.Int32()
	}
	if !r.Ok() {
		return 0, true
	}
	left := s.remain - (start - len(r.Src))
	if left < int(c) {
		return 0, false
	}
	if c < 0 {
		c = 0
	}
	return int(c), true
}

// put takes a whole unit: the in bytes read, rewritten as o[o0:], whose
// length must differ from in by want, the growth the size foretold.
func (s *FetchResponseStream) put(o []byte, o0, in, want int) (int, error) {
	if len(o)-o0-in != want {
		s.vec.Own = o[:o0]
		return 0, ErrCodecUnforeseen
	}
	s.vec.Own = o
	s.out += len(o) - o0
	return in, nil
}

// head rewrites the response header and the fields before the topics, and
// foretells the output's size, written in front of them: this unit
// rewritten, the rest as it comes but for the topic renames foreseen, the
// final tag section (empty in a foreseeable answer) replaced by the
// dropped topics and an empty one.
func (s *FetchResponseStream) head(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	r.Int32() // the broker's correlation id
	if s.flex {
		skipTags(&r)
	}
	throttle := r.Int32()
	var errCode int16
	if s.v >= 7 {
		errCode = r.Int16()
		r.Int32() // session id
	}
	n, ok := s.count(&r, len(avail))
	if !ok {
		return 0, ErrCodecShort
	}
	if !r.Ok() {
		return s.short(avail)
	}
	in := len(avail) - len(r.Src)
	s.topics = n
	s.brokerThr = throttle
	throttle = max(throttle, s.thr)
	delta, ok := s.asked.foretell(n)
	if !ok {
		return 0, ErrCodecUnforeseen
	}
	o := s.vec.Own
	o0 := len(o)
	o = kbin.AppendInt32(o, 0) // the size, written below
	o = AppendResponseHeader(o, 1, s.v, s.corr)
	o = kbin.AppendInt32(o, throttle)
	if s.v >= 7 {
		o = kbin.AppendInt16(o, errCode)
		o = kbin.AppendInt32(o, 0)
	}
	o = appendArr(o, s.flex, n+s.nd)
	endTags := 0
	if s.flex {
		endTags = 1
	}
	size := len(o) - o0 - SizeLen + (s.remain - in) + delta - endTags + len(s.tail)
	if size < 0 || size > math.MaxInt32 {
		return 0, ErrCodecUnforeseen
	}
	s.size = size
	PutSize(o[o0:], size)
	s.vec.Own = o
	s.out += len(o) - o0
	if n == 0 {
		s.st = stEnd
	} else {
		s.st = stTopic
	}
	return in, nil
}

// topicHead rewrites a topic's name and partition count: the client's
// name, its growth the one foretold.
func (s *FetchResponseStream) topicHead(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	var phys []byte
	if s.flex {
		if l := int(r.Uvarint()) - 1; l >= 0 {
			phys = r.Span(l)
		}
	} else if l := r.Int16(); l >= 0 {
		phys = r.Span(int(l))
	}
	np, ok := s.count(&r, len(avail))
	if !ok {
		return 0, ErrCodecShort
	}
	if !r.Ok() {
		return s.short(avail)
	}
	name, known := s.j.ClientTopic(phys)
	if !known {
		return 0, ErrCodecUnforeseen
	}
	want, ok := s.asked.rename(phys, s.topic)
	if !ok {
		return 0, ErrCodecUnforeseen
	}
	o := s.vec.Own
	o0 := len(o)
	o = appendStr(o, s.flex, name)
	o = appendArr(o, s.flex, np)
	s.parts, s.part = np, 0
	switch {
	case np > 0:
		s.st = stPart
	case s.flex:
		s.st = stTopicTags
	default:
		s.nextTopic()
	}
	return s.put(o, o0, len(avail)-len(r.Src), want)
}

// partHead rewrites a partition's fixed fields and its count of aborted
// transactions.
func (s *FetchResponseStream) partHead(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	fixedLen := 4 + 2 + 8 + 8 // partition, error, high watermark, last stable offset
	if s.v >= 5 {
		fixedLen += 8 // log start offset
	}
	fixed := r.Span(fixedLen)
	var na int
	if s.flex {
		na = int(r.Uvarint()) - 1
	} else {
		na = int(r.Int32())
	}
	if !r.Ok() {
		return s.short(avail)
	}
	null := na < 0
	if null {
		na = 0
	}
	in := len(avail) - len(r.Src)
	if left := s.remain - in; na > left/16 {
		return 0, ErrCodecShort
	}
	o := s.vec.Own
	o0 := len(o)
	o = append(o, fixed...)
	switch {
	case !null:
		o = appendArr(o, s.flex, na)
	case s.flex:
		o = append(o, 0)
	default:
		o = kbin.AppendInt32(o, -1)
	}
	s.abortLeft = na
	s.st = stAbort
	return s.put(o, o0, in, 0)
}

// aborts rewrites the whole aborted transactions in avail.
func (s *FetchResponseStream) aborts(avail []byte) (int, error) {
	taken := 0
	for s.abortLeft > 0 {
		r := kbin.Reader{Src: avail[taken:]}
		a := r.Span(16)
		if s.flex {
			skipTags(&r)
		}
		if !r.Ok() {
			if taken > 0 {
				return taken, nil
			}
			return s.short(avail)
		}
		in := len(avail) - taken - len(r.Src)
		out := 16
		if s.flex {
			out++
		}
		if in != out {
			return 0, ErrCodecUnforeseen
		}
		s.vec.Own = append(s.vec.Own, a...)
		s.vec.Own = appendEmptyTags(s.vec.Own, s.flex)
		s.out += out
		taken += in
		s.abortLeft--
	}
	s.st = stPartTail
	return taken, nil
}

// partTail rewrites the fields between a partition's aborted transactions
// and its records: the preferred read replica, the records' length.
func (s *FetchResponseStream) partTail(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	var prr []byte
	if s.v >= 11 {
		prr = r.Span(4)
	}
	var l int
	if s.flex {
		l = int(r.Uvarint()) - 1
	} else {
		l = int(r.Int32())
	}
	if !r.Ok() {
		return s.short(avail)
	}
	in := len(avail) - len(r.Src)
	null := l < 0
	if null {
		l = 0
	} else if left := s.remain - in; l > left {
		return 0, ErrCodecShort
	}
	o := s.vec.Own
	o0 := len(o)
	o = append(o, prr...)
	o = appendBytesLen(o, s.flex, l, null)
	s.recLeft = l
	s.st = stRecords
	return s.put(o, o0, in, 0)
}

// records references the partition's record bytes in avail.
func (s *FetchResponseStream) records(avail []byte) int {
	n := min(s.recLeft, len(avail))
	if n > 0 {
		s.vec.Ref(avail[:n])
		s.out += n
	}
	s.recLeft -= n
	if s.recLeft == 0 {
		s.afterRecords()
	}
	return n
}

// partTags rewrites a partition's tag section: its known tags only.
func (s *FetchResponseStream) partTags(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	var keep [3]fetchTag
	nk := readKnownFetchTags(&r, &keep)
	if !r.Ok() {
		return s.short(avail)
	}
	o := s.vec.Own
	o0 := len(o)
	o = appendKnownFetchTags(o, keep[:nk])
	s.nextPart()
	return s.put(o, o0, len(avail)-len(r.Src), 0)
}

// topicTags rewrites a topic's tag section, empty.
func (s *FetchResponseStream) topicTags(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	skipTags(&r)
	if !r.Ok() {
		return s.short(avail)
	}
	o := s.vec.Own
	o0 := len(o)
	o = appendEmptyTags(o, true)
	s.nextTopic()
	return s.put(o, o0, len(avail)-len(r.Src), 0)
}

// end takes the answer's final tag section, the last bytes of the frame,
// and writes in its place the dropped topics and an empty one (tail).
func (s *FetchResponseStream) end(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	if s.flex {
		skipTags(&r)
		if !r.Ok() {
			return s.short(avail)
		}
	}
	in := len(avail) - len(r.Src)
	if in != s.remain {
		return 0, ErrCodecTrailing
	}
	if s.flex && in != 1 {
		return 0, ErrCodecUnforeseen
	}
	s.vec.Own = append(s.vec.Own, s.tail...)
	s.out += len(s.tail)
	s.st = stDone
	return in, nil
}
