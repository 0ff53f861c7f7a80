package codec

import (
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// ErrCodecNotStreamed: a Produce request that ProduceRequestStream does not
// relay as it arrives (several topics, a topic the judge refuses, a head
// longer than MaxStreamUnit, a version or a head it cannot read): the
// caller gathers it whole and rewrites it with Produce, as any other frame.
var ErrCodecNotStreamed = errors.New("codec: request not streamed")

type pstate uint8

const (
	psHead pstate = iota // the head, rewritten at Begin, still to skip
	psPart
	psRecords
	psPartTags
	psTopicTags
	psEnd
	psDone
)

// ProduceRequestStream rewrites one client Produce request as it arrives,
// in pieces, into the same bytes Produce gives for the whole frame
// (invariant 26). Only a request naming exactly one topic, allowed by the
// judge, is streamed: its head (request header, transactional id, acks,
// timeout, the topic's name and partition count) comes before every
// record byte, so Begin rewrites it whole and the output's size is known
// before its first byte: the head's rewritten length plus the rest of the
// frame, which is partitions (index, records length, records, tags) and
// tag sections that keep their length. A later unit that would not (a
// non-minimal length encoding, a non-empty tag section, which the
// whole-frame form re-encodes or drops) is refused with ErrCodecUnforeseen
// before any of its bytes is written. Record bytes are referenced as they
// come, never copied (under 512 bytes aside) nor held.
//
// It is kept per session and reused from request to request: the steady
// state allocates nothing (what the judge allocates aside). Not safe for
// concurrent use.
//
// Use: Begin with the first bytes of the frame (after its size prefix,
// header included); then Feed the frame's bytes from its start as they
// arrive; after each Feed, write Slices() before the fed bytes are
// released. Feed returns how many bytes it took: the rest (a partition
// header not yet whole, at most 9 bytes) is fed again with more after it.
// The output's first piece starts with its size prefix, Size() bytes after it.
type ProduceRequestStream struct {
	vec   Vec
	fresh bool // vec to reset at the next Feed

	flex     bool
	st       pstate
	err      error
	remain   int // frame bytes not yet consumed
	size     int // output after the size prefix
	out      int // output bytes produced, size prefix included
	headLeft int // head bytes still to skip
	parts    int
	part     int
	recLeft  int
	acks     int16
	txn      bool
}

// Begin judges and rewrites the head of a Produce request of frameLen
// bytes (after the size prefix) from prefix, its first bytes (h is the
// header parsed from them), with the correlation id corr and the broker's
// client id clientID, the names mapped by j. It returns ErrCodecShort
// when prefix is too short to hold the head (shorter than the frame and
// than MaxStreamUnit: wait for more), ErrCodecNotStreamed when the request
// is to be gathered whole (see the type), nil when the stream is begun.
// Nothing of prefix is kept.
func (s *ProduceRequestStream) Begin(h *RequestHeader, prefix []byte, frameLen int, corr int32, clientID []byte, j ProduceJudge) error {
	*s = ProduceRequestStream{vec: s.vec, remain: frameLen, size: -1, err: ErrCodecNotStreamed, st: psDone}
	v := h.Version
	if h.Key != KeyProduce || v < 0 || v > 12 || frameLen < 0 || frameLen > math.MaxInt32 ||
		len(prefix) > frameLen || h.BodyOffset > len(prefix) {
		return ErrCodecNotStreamed
	}
	flex := h.Flexible
	r := rd{Reader: kbin.Reader{Src: prefix[h.BodyOffset:]}, flex: flex}
	var txn []byte
	txnNull := true
	if v >= 3 {
		txn = r.str()
		txnNull = txn == nil
	}
	acks := r.Int16()
	timeout := r.Int32()
	n := rawCount(&r.Reader, flex)
	name := r.str()
	np := rawCount(&r.Reader, flex)
	if !r.ok() {
		if len(prefix) < frameLen && len(prefix) < MaxStreamUnit {
			return ErrCodecShort
		}
		return ErrCodecNotStreamed
	}
	headIn := len(prefix) - len(r.Src)
	left := frameLen - headIn
	if n != 1 || int(np) > left {
		return ErrCodecNotStreamed // the whole-frame form judges (or refuses) it
	}
	if np < 0 {
		np = 0
	}
	phys, code := j.ProduceTopic(name)
	if code != 0 {
		return ErrCodecNotStreamed // answered as on the whole-frame path
	}

	s.vec.Reset()
	s.vec.start = SizeLen // the reserved prefix is not output: the size is written as own bytes
	o := kbin.AppendInt32(s.vec.Own, 0)
	o = AppendRequestHeader(o, h.Key, v, corr, clientID, h.ClientNull, flex)
	if v >= 3 {
		if !txnNull {
			tid := j.TxnID(txn)
			if len(tid) > MaxString {
				return ErrCodecNotStreamed
			}
			o = appendStr(o, flex, tid)
		} else {
			o = appendNullStr(o, flex, nil, true)
		}
	}
	o = kbin.AppendInt16(o, acks)
	o = kbin.AppendInt32(o, timeout)
	o = appendArr(o, flex, 1)
	o = appendStr(o, flex, phys)
	o = appendArr(o, flex, int(np))
	size := len(o) - 2*SizeLen + left
	if size > math.MaxInt32 {
		return ErrCodecNotStreamed
	}
	PutSize(o[SizeLen:], size)
	s.vec.Own = o
	s.flex, s.acks, s.txn = flex, acks, !txnNull
	s.size, s.out = size, len(o)-SizeLen
	s.parts, s.headLeft = int(np), headIn
	s.err, s.st = nil, psHead
	return nil
}

// rawCount reads an array count as kbin does (a compact one as int32 of
// the uvarint, minus one), not bounded by what the reader holds: the
// caller bounds it by the frame's remaining bytes.
func rawCount(r *kbin.Reader, flex bool) int32 {
	if flex {
		return int32(r.Uvarint()) - 1
	}
	return r.Int32()
}

// Acks is the request's acks (0: the broker will not answer).
func (s *ProduceRequestStream) Acks() int16 { return s.acks }

// Transactional tells whether the request carries a transactional id.
func (s *ProduceRequestStream) Transactional() bool { return s.txn }

// Size is the length of the output frame after its size prefix.
func (s *ProduceRequestStream) Size() int { return s.size }

// Done tells whether the whole request was consumed and rewritten.
func (s *ProduceRequestStream) Done() bool { return s.st == psDone && s.err == nil }

// Remaining is the number of frame bytes still to feed.
func (s *ProduceRequestStream) Remaining() int { return s.remain }

// Slices closes the piece produced since the last call (the head, at the
// first call) and returns it as slices to write, in order; they reference
// the fed bytes.
func (s *ProduceRequestStream) Slices() [][]byte {
	if s.fresh || s.err != nil {
		return nil
	}
	s.fresh = true
	return s.vec.Slices()
}

// RecordsLeft is the number of record bytes of the current partition
// still to come when the stream is inside them (0 otherwise).
func (s *ProduceRequestStream) RecordsLeft() int {
	if s.err != nil || s.st != psRecords {
		return 0
	}
	return s.recLeft
}

// SkipRecords accounts for n record bytes of the current partition that
// went to the broker another way (the engine's splice: they never enter
// the process), as if they had been fed and written. Only inside records
// (n at most RecordsLeft()) and with no piece pending (Slices taken);
// false otherwise, and nothing changes. The stream goes on with the bytes
// that follow them.
func (s *ProduceRequestStream) SkipRecords(n int) bool {
	if n < 0 || n > s.RecordsLeft() || s.Pending() > 0 {
		return false
	}
	s.recLeft -= n
	s.remain -= n
	s.out += n
	if s.recLeft == 0 {
		s.afterRecords()
		if s.st == psEnd && !s.flex && s.remain == 0 {
			// The records were the frame's last bytes (as unit does at
			// psEnd, which no Feed would reach: nothing is left to feed).
			if s.out != s.size+SizeLen {
				s.fail(ErrCodecUnforeseen) // cannot happen: the head counted every byte
				return true
			}
			s.st = psDone
		}
	}
	return true
}

// Pending is the number of output bytes produced and not yet taken by Slices.
func (s *ProduceRequestStream) Pending() int {
	if s.fresh {
		return 0
	}
	return s.vec.Len()
}

func (s *ProduceRequestStream) fail(err error) (int, error) {
	s.err = err
	s.vec.Reset()
	s.vec.start = SizeLen
	return 0, err
}

// Feed consumes what it can of chunk, the next bytes of the frame (the
// first Feed starts at the frame's first byte, after its size prefix), and
// appends the output to the piece that Slices returns. It never takes
// bytes past the frame's end. consumed < len(chunk) with no error and
// !Done() means the rest is a unit not yet whole: feed it again with more.
// Once an error is returned the stream is dead: the caller closes the
// connection as for a malformed request (ErrCodecShort, ErrCodecTrailing:
// the whole-frame form fails too; ErrCodecUnforeseen, ErrCodecUnitTooLong:
// see the type).
func (s *ProduceRequestStream) Feed(chunk []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.fresh {
		s.vec.Reset()
		s.vec.start = SizeLen // the reserved prefix is not output
		s.fresh = false
	}
	avail := chunk
	if len(avail) > s.remain {
		avail = avail[:s.remain]
	}
	total := 0
	for s.st != psDone {
		prev := s.st
		var n int
		var err error
		switch s.st {
		case psHead:
			n = min(s.headLeft, len(avail))
			s.headLeft -= n
			if s.headLeft == 0 {
				s.endPart()
			}
		case psRecords:
			n = min(s.recLeft, len(avail))
			if n > 0 {
				s.vec.Ref(avail[:n])
				s.out += n
			}
			s.recLeft -= n
			if s.recLeft == 0 {
				s.afterRecords()
			}
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
	if s.st == psDone && s.out != s.size+SizeLen {
		return s.fail(ErrCodecUnforeseen) // cannot happen: every unit is checked
	}
	return total, nil
}

func (s *ProduceRequestStream) afterRecords() {
	if s.flex {
		s.st = psPartTags
		return
	}
	s.part++
	s.endPart()
}

// endPart moves on after the head or a partition: the next partition,
// or the topic's end.
func (s *ProduceRequestStream) endPart() {
	if s.part < s.parts {
		s.st = psPart
		return
	}
	if s.flex {
		s.st = psTopicTags
	} else {
		s.st = psEnd
	}
}

// short decides what a unit that did not parse from avail means.
func (s *ProduceRequestStream) short(avail []byte) (int, error) { return shortUnit(avail, s.remain) }

// shortUnit is what a stream's unit that did not parse from avail, with
// remain bytes of the frame left, means: more bytes are needed (0, nil),
// or the frame is malformed (it ends first: the whole-frame form fails
// too), or the unit is too long.
func shortUnit(avail []byte, remain int) (int, error) {
	if len(avail) == remain {
		return 0, ErrCodecShort
	}
	if len(avail) >= MaxStreamUnit {
		return 0, ErrCodecUnitTooLong
	}
	return 0, nil
}

// emptyTags takes a tag section that must be empty (one zero byte, which
// the whole-frame form writes back); anything else changes the size.
func (s *ProduceRequestStream) emptyTags(avail []byte) (int, error) {
	if len(avail) == 0 {
		return s.short(avail)
	}
	if avail[0] != 0 {
		return 0, ErrCodecUnforeseen
	}
	s.vec.Own = append(s.vec.Own, 0)
	s.out++
	return 1, nil
}

// unit parses and rewrites one whole unit of the current state from avail.
func (s *ProduceRequestStream) unit(avail []byte) (int, error) {
	switch s.st {
	case psPart:
		r := kbin.Reader{Src: avail}
		part := r.Int32()
		var l int
		var raw uint32
		if s.flex {
			raw = r.Uvarint()
			l = int(raw) - 1
		} else {
			l = int(r.Int32())
		}
		if !r.Ok() {
			if len(avail) >= 4+5 { // the longest partition header: its length is malformed
				return 0, ErrCodecShort
			}
			return s.short(avail)
		}
		in := len(avail) - len(r.Src)
		null := l < 0
		if null {
			l = 0
		} else if l > s.remain-in {
			return 0, ErrCodecShort
		}
		o0 := len(s.vec.Own)
		o := kbin.AppendInt32(s.vec.Own, part)
		o = appendBytesLen(o, s.flex, l, null)
		if len(o)-o0 != in {
			return 0, ErrCodecUnforeseen // a length not minimally encoded
		}
		s.vec.Own = o
		s.out += in
		s.recLeft = l
		if l > 0 {
			s.st = psRecords
		} else {
			s.afterRecords()
		}
		return in, nil
	case psPartTags:
		n, err := s.emptyTags(avail)
		if n > 0 {
			s.part++
			s.endPart()
		}
		return n, err
	case psTopicTags:
		n, err := s.emptyTags(avail)
		if n > 0 {
			s.st = psEnd
		}
		return n, err
	case psEnd:
		n := 0
		if s.flex {
			var err error
			if n, err = s.emptyTags(avail); n == 0 {
				return n, err
			}
		}
		if s.remain != n {
			return 0, ErrCodecTrailing
		}
		s.st = psDone
		return n, nil
	}
	return 0, nil
}
