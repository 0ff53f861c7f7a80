package codec

import (
	"bytes"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// MaxStreamUnit bounds one unit of a streamed Fetch answer that must be
// whole before it is rewritten: the response header with the fields before
// the topics, a topic header (name, partition count), a partition header up
// to its aborted-transaction count, one aborted transaction, the fields
// before a partition's records, a tag section. Records are never part of a
// unit. A unit longer than this is refused (ErrCodecUnitTooLong); a broker
// never sends one (a topic name is at most 249 bytes).
const MaxStreamUnit = 64 << 10

var (
	// ErrCodecUnforeseen: a streamed answer whose rewritten size differs
	// from the size announced before its first byte: a topic the request
	// did not ask (or more topics than asked, when their renames differ
	// in length), a non-minimal length encoding, a tag section that the
	// rewrite would shrink or grow (unknown tags, nested tags). The whole
	// answer rewritten in one piece would leave the topic out or drop the
	// tags; a stream cannot, its size being already written. A streamed
	// Produce request is refused with it likewise (ProduceRequestStream).
	ErrCodecUnforeseen = errors.New("codec: streamed answer differs from the size announced")
	// ErrCodecUnitTooLong: a header or tag section longer than MaxStreamUnit.
	ErrCodecUnitTooLong = errors.New("codec: streamed header too long")
)

type streamState uint8

const (
	stHead streamState = iota
	stTopic
	stPart
	stAbort
	stPartTail
	stRecords
	stPartTags
	stTopicTags
	stEnd
	stDone
)

// FetchResponseStream rewrites one broker Fetch answer as it arrives, in
// pieces, into the same bytes (FetchResponse) gives for the whole frame:
// the headers (response, topic, partition), aborted transactions and tag
// sections are rewritten as soon as each is whole; record bytes are
// referenced as they come, never copied nor held. It is kept per broker
// connection and reused from answer to answer: the steady state allocates
// nothing (what the judge allocates aside). Not safe for concurrent use.
//
// Use: Begin with the frame's length (after the size prefix), then Feed
// the frame's bytes (response header first) as they arrive; after each
// Feed, write Slices() before the fed bytes are released. Feed returns how
// many bytes it took: the rest (a header not yet whole, at most
// MaxStreamUnit bytes) is to be fed again with more after it. The output's
// first piece starts with its size prefix, Size() bytes in all.
type FetchResponseStream struct {
	vec   Vec
	fresh bool // vec to reset at the next Feed

	v      int16
	flex   bool
	corr   int32
	thr    int32
	j      FetchJudge
	st     streamState
	err    error
	remain int // frame bytes not yet consumed
	size   int // output after the size prefix, -1 until known
	out    int // output bytes produced, size prefix included

	brokerThr int32 // the broker's throttle_time_ms, once the head is read

	asked   [][]byte
	deltas  []int
	seen    []bool
	uniform bool
	delta   int // the uniform delta

	tail []byte // dropped topics and the final tag section, encoded at Begin
	nd   int

	topics, topic     int // topics in the answer, index of the current one
	parts, part       int
	abortLeft         int
	recLeft           int
	topicDelta        int // foreseen delta of the current topic
	firstOwnAfterHead bool
}

// Begin starts a new answer of frameLen bytes (after the size prefix) of
// Fetch version (4..12), answering the client's correlation id corr.
// asked lists the broker's names of the topics the forwarded request
// asked (j.ClientTopic maps them back); together with the answer's topic
// count it foretells the output size. dropped and throttleMs are as for
// FetchResponse. The slices given must stay valid until the answer is done.
func (s *FetchResponseStream) Begin(version int16, corr int32, frameLen int, asked [][]byte, j FetchJudge, dropped *Dropped, throttleMs int32) error {
	*s = FetchResponseStream{
		vec: s.vec, asked: s.asked[:0], deltas: s.deltas[:0], seen: s.seen[:0], tail: s.tail[:0],
		v: version, flex: version >= 12, corr: corr, thr: throttleMs, j: j,
		remain: frameLen, size: -1, fresh: true,
	}
	if version < minFetchVersion || version > 12 {
		s.err = ErrCodecVersion
		return s.err
	}
	if frameLen < 0 || frameLen > math.MaxInt32 {
		s.err = ErrCodecShort
		return s.err
	}
	s.uniform = true
	for i, p := range asked {
		d := 0
		if name, ok := j.ClientTopic(p); ok {
			d = strLen(s.flex, len(name)) - strLen(s.flex, len(p))
		} else {
			d = math.MinInt32 // never matches: such a topic is refused
		}
		s.asked = append(s.asked, p)
		s.deltas = append(s.deltas, d)
		s.seen = append(s.seen, false)
		if i == 0 {
			s.delta = d
		} else if d != s.delta {
			s.uniform = false
		}
	}
	if len(asked) == 0 || s.delta == math.MinInt32 {
		s.uniform = false
	}
	if dropped != nil {
		s.nd = len(dropped.Topics)
		for i := range dropped.Topics {
			d := &dropped.Topics[i]
			o := appendStr(s.tail, s.flex, d.Name)
			o = appendArr(o, s.flex, len(d.Partitions))
			for _, p := range d.Partitions {
				o = appendFetchErrPartition(o, version, p, d.Code)
			}
			s.tail = appendEmptyTags(o, s.flex)
		}
	}
	s.tail = appendEmptyTags(s.tail, s.flex)
	return nil
}

// strLen is the encoded length of a string of n bytes.
func strLen(flex bool, n int) int {
	if flex {
		return kbin.UvarintLen(uint32(n+1)) + n
	}
	return 2 + n
}

// BrokerThrottle is the broker's throttle_time_ms, once the answer's head
// is read (0 before).
func (s *FetchResponseStream) BrokerThrottle() int32 { return s.brokerThr }

// Size is the length of the output frame after its size prefix, known once
// the first piece is produced (-1 before).
func (s *FetchResponseStream) Size() int { return s.size }

// Done tells whether the whole answer was consumed and rewritten.
func (s *FetchResponseStream) Done() bool { return s.st == stDone }

// Remaining is the number of frame bytes still to feed.
func (s *FetchResponseStream) Remaining() int { return s.remain }

// Slices closes the piece produced by the Feeds since the last call and
// returns it as slices to write, in order; they reference the fed bytes.
func (s *FetchResponseStream) Slices() [][]byte {
	if s.fresh {
		return nil
	}
	s.fresh = true
	return s.vec.Slices()
}

// RecordsLeft is the number of record bytes of the current partition
// still to come when the stream is inside them (0 otherwise).
func (s *FetchResponseStream) RecordsLeft() int {
	if s.err != nil || s.st != stRecords {
		return 0
	}
	return s.recLeft
}

// SkipRecords accounts for n record bytes of the current partition that
// went to the client another way (the engine's splice: they never enter
// the process), as if they had been fed and written. Only inside records
// (n at most RecordsLeft()) and with no piece pending (Slices taken);
// false otherwise, and nothing changes. The stream goes on with the bytes
// that follow them.
func (s *FetchResponseStream) SkipRecords(n int) bool {
	if n < 0 || n > s.RecordsLeft() || s.Pending() > 0 {
		return false
	}
	s.recLeft -= n
	s.remain -= n
	s.out += n
	if s.recLeft == 0 {
		s.afterRecords()
	}
	return true
}

// Pending is the number of output bytes produced and not yet taken by Slices.
func (s *FetchResponseStream) Pending() int {
	if s.fresh {
		return 0
	}
	return s.vec.Len()
}

// fail records err, drops the piece in progress, and returns err.
func (s *FetchResponseStream) fail(err error) (int, error) {
	s.err = err
	s.vec.Reset()
	s.vec.start = SizeLen
	return 0, err
}

// Feed consumes what it can of chunk, the next bytes of the frame, and
// appends the output so far to the piece that Slices returns. It never
// takes bytes past the frame's end. consumed < len(chunk) with no error
// and !Done() means the rest is a unit not yet whole: feed it again with
// more. Once an error is returned, the stream is dead (the caller closes
// the connection as for a malformed answer).
func (s *FetchResponseStream) Feed(chunk []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.fresh {
		s.vec.Reset()
		s.vec.start = SizeLen // the reserved prefix is not output: the size is written as own bytes
		s.fresh = false
	}
	avail := chunk
	if len(avail) > s.remain {
		avail = avail[:s.remain]
	}
	total := 0
	for s.st != stDone {
		prev := s.st
		var n int
		var err error
		switch s.st {
		case stRecords:
			n = s.recLeft
			if n > len(avail) {
				n = len(avail)
			}
			if n > 0 {
				s.vec.Ref(avail[:n])
				s.out += n
			}
			s.recLeft -= n
			if s.recLeft == 0 {
				s.afterRecords()
			}
		case stAbort:
			n, err = s.aborts(avail)
		default:
			n, err = s.unit(avail)
		}
		if err != nil {
			return s.fail(err)
		}
		avail = avail[n:]
		total += n
		s.remain -= n
		if n == 0 && s.st == prev {
			break // a unit not yet whole, or no bytes left
		}
	}
	if s.st == stDone && s.out != s.size+SizeLen {
		return s.fail(ErrCodecUnforeseen) // cannot happen: every unit is checked
	}
	return total, nil
}

func (s *FetchResponseStream) afterRecords() {
	if s.flex {
		s.st = stPartTags
	} else {
		s.nextPart()
	}
}

func (s *FetchResponseStream) nextPart() {
	s.part++
	if s.part < s.parts {
		s.st = stPart
		return
	}
	if s.flex {
		s.st = stTopicTags
	} else {
		s.nextTopic()
	}
}

func (s *FetchResponseStream) nextTopic() {
	s.topic++
	if s.topic < s.topics {
		s.st = stTopic
	} else {
		s.st = stEnd
	}
}

// short decides what a unit that did not parse from avail means: more
// bytes are needed (0, nil), or the frame is malformed or the unit too long.
func (s *FetchResponseStream) short(avail []byte) (int, error) {
	if len(avail) == s.remain {
		return 0, ErrCodecShort // the frame ends first: the whole-frame form fails too
	}
	if len(avail) >= MaxStreamUnit {
		return 0, ErrCodecUnitTooLong
	}
	return 0, nil
}

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

// unit parses and rewrites one whole unit of the current state from avail.
func (s *FetchResponseStream) unit(avail []byte) (int, error) {
	r := kbin.Reader{Src: avail}
	o := s.vec.Own
	o0 := len(o)
	want := 0 // output length - input length the size foretold
	switch s.st {
	case stHead:
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
		s.topics = n
		s.brokerThr = throttle
		if s.thr > throttle {
			throttle = s.thr
		}
		o = kbin.AppendInt32(o, 0) // the size, written below
		o = AppendResponseHeader(o, 1, s.v, s.corr)
		o = kbin.AppendInt32(o, throttle)
		if s.v >= 7 {
			o = kbin.AppendInt16(o, errCode)
			o = kbin.AppendInt32(o, 0)
		}
		o = appendArr(o, s.flex, n+s.nd)
		in := len(avail) - len(r.Src)
		// The size: this unit rewritten, the rest as it comes but for the
		// topic renames foreseen, the final tag section (empty in a
		// foreseeable answer) replaced by the dropped topics and an empty one.
		delta := 0
		switch {
		case n == 0:
		case s.uniform:
			delta = n * s.delta
		case n == len(s.asked):
			for _, d := range s.deltas {
				if d == math.MinInt32 {
					return 0, ErrCodecUnforeseen
				}
				delta += d
			}
		default:
			return 0, ErrCodecUnforeseen
		}
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

	case stTopic:
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
		want = s.delta
		if !s.uniform {
			i := s.match(phys)
			if i < 0 {
				return 0, ErrCodecUnforeseen
			}
			s.seen[i] = true
			want = s.deltas[i]
		}
		o = appendStr(o, s.flex, name)
		o = appendArr(o, s.flex, np)
		s.parts, s.part = np, 0
		if np == 0 {
			if s.flex {
				s.st = stTopicTags
			} else {
				defer s.nextTopic()
			}
		} else {
			s.st = stPart
		}

	case stPart:
		fixedLen := 4 + 2 + 8 + 8
		if s.v >= 5 {
			fixedLen += 8
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
		if left := s.remain - (len(avail) - len(r.Src)); na > left/16 {
			return 0, ErrCodecShort
		}
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

	case stPartTail:
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
		null := l < 0
		if null {
			l = 0
		} else if left := s.remain - (len(avail) - len(r.Src)); l > left {
			return 0, ErrCodecShort
		}
		o = append(o, prr...)
		o = appendBytesLen(o, s.flex, l, null)
		s.recLeft = l
		s.st = stRecords

	case stPartTags:
		var keep [3]fetchTag
		nk := readKnownFetchTags(&r, &keep)
		if !r.Ok() {
			return s.short(avail)
		}
		o = appendKnownFetchTags(o, keep[:nk])
		defer s.nextPart()

	case stTopicTags:
		skipTags(&r)
		if !r.Ok() {
			return s.short(avail)
		}
		o = appendEmptyTags(o, true)
		defer s.nextTopic()

	case stEnd:
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
		s.vec.Own = append(o, s.tail...)
		s.out += len(s.tail)
		s.st = stDone
		return in, nil
	}
	in := len(avail) - len(r.Src)
	if len(o)-o0-in != want {
		s.vec.Own = o[:o0]
		return 0, ErrCodecUnforeseen
	}
	s.vec.Own = o
	s.out += len(o) - o0
	return in, nil
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

// match finds the asked topic phys not yet answered, in order first.
func (s *FetchResponseStream) match(phys []byte) int {
	if t := s.topic; t < len(s.asked) && !s.seen[t] && bytes.Equal(s.asked[t], phys) {
		return t
	}
	for i, a := range s.asked {
		if !s.seen[i] && bytes.Equal(a, phys) {
			return i
		}
	}
	return -1
}

// FetchAsked appends to dst the broker's names of the topics the last
// FetchRequest forwarded (what Begin's asked wants). They are the judge's
// slices: valid as long as the judge keeps them.
func (w *Rewriter) FetchAsked(dst [][]byte) [][]byte {
	for i, p := range w.names {
		if i < len(w.codes) && w.codes[i] == 0 {
			dst = append(dst, p)
		}
	}
	return dst
}
