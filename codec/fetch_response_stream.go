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

	asked askedTopics // what the request asked: the renames that foretell the size

	tail []byte // dropped topics and the final tag section, encoded at Begin
	nd   int    // dropped topics in tail

	topics, topic int // topics in the answer, index of the current one
	parts, part   int // partitions of the current topic, index of the current one
	abortLeft     int // aborted transactions of the current partition still to come
	recLeft       int // record bytes of the current partition still to come
}

// askedTopics is what the forwarded request asked, kept by Begin to
// foretell the answer's size: the broker's name of each asked topic, the
// growth of its encoding when renamed to the client's name, and whether
// the answer has already given it.
type askedTopics struct {
	names   [][]byte
	deltas  []int // math.MinInt32 for a topic the judge does not know
	seen    []bool
	uniform bool // every topic asked grows by delta: no topic needs matching
	delta   int  // the uniform delta
}

// reset keeps asked, the broker's names, with the growth of each one's
// rename to the client's name by j.
func (a *askedTopics) reset(asked [][]byte, j FetchJudge, flex bool) {
	a.names, a.deltas, a.seen = a.names[:0], a.deltas[:0], a.seen[:0]
	a.uniform, a.delta = true, 0
	for i, p := range asked {
		d := 0
		if name, ok := j.ClientTopic(p); ok {
			d = strLen(flex, len(name)) - strLen(flex, len(p))
		} else {
			d = math.MinInt32 // never matches: such a topic is refused
		}
		a.names = append(a.names, p)
		a.deltas = append(a.deltas, d)
		a.seen = append(a.seen, false)
		if i == 0 {
			a.delta = d
		} else if d != a.delta {
			a.uniform = false
		}
	}
	if len(asked) == 0 || a.delta == math.MinInt32 {
		a.uniform = false
	}
}

// foretell is the growth of an answer of n topics by their renames; false
// when it cannot be foretold: renames that differ in length, unless the
// answer gives every topic asked, or a topic the judge does not know.
func (a *askedTopics) foretell(n int) (int, bool) {
	switch {
	case n == 0:
		return 0, true
	case a.uniform:
		return n * a.delta, true
	case n == len(a.names):
		delta := 0
		for _, d := range a.deltas {
			if d == math.MinInt32 {
				return 0, false
			}
			delta += d
		}
		return delta, true
	}
	return 0, false
}

// rename is the growth foretold for the answer's topic phys, the answer's
// topic-th: the uniform delta, or that of the asked topic it answers (then
// marked answered); false for a topic not asked, or asked and answered.
func (a *askedTopics) rename(phys []byte, topic int) (int, bool) {
	if a.uniform {
		return a.delta, true
	}
	i := a.match(phys, topic)
	if i < 0 {
		return 0, false
	}
	a.seen[i] = true
	return a.deltas[i], true
}

// match finds the asked topic phys not yet answered, the answer's
// topic-th first (answers keep the order asked).
func (a *askedTopics) match(phys []byte, topic int) int {
	if t := topic; t < len(a.names) && !a.seen[t] && bytes.Equal(a.names[t], phys) {
		return t
	}
	for i, n := range a.names {
		if !a.seen[i] && bytes.Equal(n, phys) {
			return i
		}
	}
	return -1
}

// Begin starts a new answer of frameLen bytes (after the size prefix) of
// Fetch version (4..12), answering the client's correlation id corr.
// asked lists the broker's names of the topics the forwarded request
// asked (j.ClientTopic maps them back); together with the answer's topic
// count it foretells the output size. dropped and throttleMs are as for
// FetchResponse. The slices given must stay valid until the answer is done.
func (s *FetchResponseStream) Begin(version int16, corr int32, frameLen int, asked [][]byte, j FetchJudge, dropped *Dropped, throttleMs int32) error {
	*s = FetchResponseStream{
		vec: s.vec, asked: s.asked, tail: s.tail[:0],
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
	s.asked.reset(asked, j, s.flex)
	if dropped != nil {
		s.nd = len(dropped.Topics)
	}
	s.tail = appendEmptyTags(appendFetchDropped(s.tail, version, dropped), s.flex)
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
//
// Each state takes its whole unit from the bytes left, or nothing (the
// unit not yet whole), and moves to the next state; records are taken as
// they come.
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
		case stHead:
			n, err = s.head(avail)
		case stTopic:
			n, err = s.topicHead(avail)
		case stPart:
			n, err = s.partHead(avail)
		case stAbort:
			n, err = s.aborts(avail)
		case stPartTail:
			n, err = s.partTail(avail)
		case stRecords:
			n = s.records(avail)
		case stPartTags:
			n, err = s.partTags(avail)
		case stTopicTags:
			n, err = s.topicTags(avail)
		case stEnd:
			n, err = s.end(avail)
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
