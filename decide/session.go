package decide

import (
	"time"

	"github.com/flexway/flexway/codec"
)

// Outcome is the verdict on one request.
type Outcome uint8

const (
	// Forward: s.RW.Vec holds the request to write to the broker; the
	// Pending describes how to rewrite its answer.
	Forward Outcome = iota
	// Answer: s.RW.Vec holds the gateway's own answer for the client.
	Answer
	// Drop: nothing to write, nothing to answer (an acks=0 Produce whose
	// topics were all refused).
	Drop
	// Disconnect: close the client's connection (a never-announced API, a
	// version not announced, a malformed request).
	Disconnect
)

// Brokers names the brokers as the client must see them (L1, L2).
type Brokers interface {
	// Advertise returns the host and port announced for a broker's node id.
	Advertise(nodeID int32) (host string, port int32)
	// Learn records a broker's real address, read from a Metadata answer
	// before it is renamed (the upstream's address book stays current).
	Learn(nodeID int32, host string, port int32)
}

// Limits are the bounds in force for the session's requests.
type Limits struct {
	MaxFetchWaitMs int32 // max_fetch_wait
	// Bounded administration (D8); zero stands for the listener's default.
	MaxTopicPartitions int32 // max_topic_partitions: CreateTopics, CreatePartitions
	MaxRequestBytes    int64 // max_request_bytes: the bound of max.message.bytes
}

// Session is the decision state of one authenticated connection.
// Not safe for concurrent use: it belongs to its connection's loop.
type Session struct {
	// *Scratch is the working memory of the request or answer being
	// judged, shared by the sessions of one loop (the engine gives each
	// session its loop's); a session given none makes its own at its
	// first use.
	*Scratch
	View     *View
	Versions *Versions
	Brokers  Brokers
	Limits   Limits
	// stream relays a large Fetch answer as it arrives (FetchStream);
	// pstream a large Produce request (ProduceStream). Each is made at its
	// first use and kept: an idle session holds neither (half a KiB).
	stream  *codec.FetchResponseStream
	pstream *codec.ProduceRequestStream
	// FetchQuota is what the quotas allow the answer of the Fetch being
	// judged (0: no bound), set by the caller for that one request.
	FetchQuota int32
}

// Scratch is what judging one request or rewriting one answer works in:
// the rewriter, whose Vec holds the frame to write once a method returns,
// and copies of the request's header and client id. Nothing in it
// outlives the call that filled it but the Vec's frame, which the caller
// writes or copies before it judges anything else (Pending.Dropped is
// cloned out of it). One loop judges one request at a time, so its
// sessions share one Scratch: an idle session keeps none of this memory,
// the rewriter's buffers sized by the largest frame it built included
// (issue 35.3).
type Scratch struct {
	RW      codec.Rewriter
	hdr     codec.RequestHeader // the header, copied (see Request)
	cid     []byte              // the client id as the broker sees it
	bodyLen int                 // the size of the body (answers that echo it)
	grant   int32               // what the budgets allow the answer to bring back
}

// scratch gives the session a Scratch of its own if it has none.
func (s *Session) scratch() {
	if s.Scratch == nil {
		s.Scratch = new(Scratch)
	}
}

// Pending is what the relay keeps of a forwarded request to rewrite its answer.
type Pending struct {
	Key, Version int16
	ClientCorr   int32
	UpCorr       int32 // the correlation id towards the broker
	// NoResponse: the broker will not answer (Produce with acks=0).
	NoResponse bool
	// Reserve is the largest answer expected, in bytes (B2).
	Reserve int64
	// Dropped are the topics codec's rewriters left out of a Produce or a
	// Fetch, answered by the gateway and merged into the broker's answer.
	Dropped codec.Dropped
	// Local is set when the gateway answered: the relay then holds the
	// answer's bytes until the answers before it are written.
	Local []byte
	// Cause: why a request was refused or disconnected, for the log.
	Cause string
	// Throttle is the gateway's throttle_time_ms for the answer (quotas,
	// issue 8): the answer carries the larger of it and the broker's.
	Throttle int32
	// BrokerThrottle is the broker's own throttle_time_ms, read in its
	// answer (0 when the answer has none).
	BrokerThrottle int32
	// Life is what the engine keeps with the answer for the request's
	// count and span (O1, O5); decide only resets it.
	Life Life

	// What the APIs rewritten with kmsg keep for their answer:
	// refused holds what the gateway answers itself (refused.go);
	refused refusals
	// unknownTopics, the topics a Metadata request asked that the view
	// does not hold (answered UNKNOWN_TOPIC_OR_PARTITION);
	unknownTopics []string
	// consumer, that a JoinGroup spoke the consumer protocol (before v7
	// the answer does not say).
	consumer bool
	// asked, the broker's names of the topics a forwarded Fetch asked
	// (the view's slices): what a streamed answer's size is foretold from.
	asked [][]byte
}

// Life is a request's life at the gateway as its signals see it: from
// its first byte read (Since) to its answer's last byte written. Kept in
// the Pending so that a span costs nothing outside its sample: no
// allocation, a time and a few flags per answer.
type Life struct {
	Since   time.Time // the read that brought its first byte (zero: unknown, the span starts at its judgement)
	Sampled bool      // it makes a span when its answer has left
	// Counted: counted at its judgement (refused, or answered by the
	// gateway), with Decision and Cause (the engine's signals labels);
	// else counted as its answer leaves, with the throttle it carries.
	Counted         bool
	Decision, Cause uint8
}

// reset empties p for reuse.
func (p *Pending) reset() {
	*p = Pending{Dropped: codec.Dropped{Topics: p.Dropped.Topics[:0]}, asked: p.asked[:0]}
}

// Request judges one request of an authenticated session. frame is the
// request after its size prefix, h its parsed header; upCorr is the
// correlation id to give it towards the broker; grant is what the budgets
// allow its answer to bring back (B2: a Fetch's MaxBytes is brought down to
// it). On Forward and Answer, s.RW.Vec holds the frame to write; on
// Disconnect, p.Cause says why.
func (s *Session) Request(h *codec.RequestHeader, frame []byte, upCorr, grant int32, p *Pending) Outcome {
	s.scratch()
	s.grant = grant
	// The judgement reads the session's copy of the header: handed to the
	// table's functions, the caller's would escape to the heap, one
	// allocation per request. The copy's client id aliases frame: it is
	// not kept past the judgement.
	s.hdr = *h
	out := s.request(&s.hdr, frame, upCorr, p)
	s.hdr = codec.RequestHeader{}
	return out
}

func (s *Session) request(h *codec.RequestHeader, frame []byte, upCorr int32, p *Pending) Outcome {
	p.reset()
	p.Key, p.Version, p.ClientCorr, p.UpCorr = h.Key, h.Version, h.Correlation, upCorr
	kind, why := KindOf(h.Key)
	if kind != Served {
		if kind == Local {
			p.Cause = "unexpected " + Name(h.Key)
		} else {
			p.Cause = "API " + Name(h.Key) + " is never announced (" + why + ")"
		}
		return Disconnect
	}
	if !s.Versions.Has(h.Key, h.Version) {
		p.Cause = "version not announced"
		return Disconnect
	}
	s.cid = s.View.AppendClientID(s.cid[:0], h.ClientID)
	if len(s.cid) > codec.MaxString {
		p.Cause = "client id too long once prefixed with the tenant"
		return Disconnect
	}
	s.bodyLen = len(frame) - h.BodyOffset
	return table[h.Key].req(s, h, frame[h.BodyOffset:], p)
}

// Response rewrites the broker's answer to a forwarded request (frame
// after the size prefix) into s.RW.Vec for the client.
func (s *Session) Response(p *Pending, frame []byte) error {
	s.scratch()
	_, body, err := codec.ParseResponseHeader(frame, p.Key, p.Version)
	if err != nil {
		return err
	}
	return table[p.Key].resp(s, p, body)
}

// FetchStream begins the rewrite of the broker's answer to the forwarded
// Fetch p as it arrives, frameLen bytes after its size prefix (invariant
// 21): the caller feeds the frame's bytes to the stream returned, writes
// its Slices to the client after each Feed, and pops p once it is Done.
// One stream per session: it is valid until the next FetchStream.
func (s *Session) FetchStream(p *Pending, frameLen int) (*codec.FetchResponseStream, error) {
	if p.Key != codec.KeyFetch {
		return nil, codec.ErrCodecVersion
	}
	if s.stream == nil {
		s.stream = new(codec.FetchResponseStream)
	}
	if err := s.stream.Begin(p.Version, p.ClientCorr, frameLen, p.asked, s.View, &p.Dropped, p.Throttle); err != nil {
		return nil, err
	}
	return s.stream, nil
}

// ProduceStream judges a Produce request from its first bytes, to relay it
// to the broker as it arrives (invariant 26): prefix is the frame after
// its size prefix as far as it has come (header included, h parsed from
// it), frameLen the frame's whole length, upCorr the correlation id to
// give it. On success p holds what its answer needs (none with acks=0:
// p.NoResponse) and the caller feeds the frame's bytes, from its first, to
// the stream returned, writing its Slices to the broker after each Feed.
// codec.ErrCodecShort: prefix is too short to judge, wait for more;
// codec.ErrCodecNotStreamed: the frame is to be gathered whole and judged
// by Request (what is not a one-topic Produce whose topic the view allows,
// a transactional Produce of a session without transactions): a refusal is
// answered as on the whole-frame path. One stream per session, valid until
// the next ProduceStream.
func (s *Session) ProduceStream(h *codec.RequestHeader, prefix []byte, frameLen int, upCorr int32, p *Pending) (*codec.ProduceRequestStream, error) {
	if h.Key != codec.KeyProduce || !s.Versions.Has(h.Key, h.Version) {
		return nil, codec.ErrCodecNotStreamed
	}
	s.scratch()
	s.cid = s.View.AppendClientID(s.cid[:0], h.ClientID)
	if len(s.cid) > codec.MaxString {
		return nil, codec.ErrCodecNotStreamed
	}
	s.hdr = *h // as in Request: the caller's header does not escape
	if s.pstream == nil {
		s.pstream = new(codec.ProduceRequestStream)
	}
	err := s.pstream.Begin(&s.hdr, prefix, frameLen, upCorr, s.cid, s.View)
	s.hdr = codec.RequestHeader{}
	if err != nil {
		return nil, err
	}
	if s.pstream.Transactional() && !s.View.Transactions {
		return nil, codec.ErrCodecNotStreamed
	}
	p.reset()
	p.Key, p.Version, p.ClientCorr, p.UpCorr = h.Key, h.Version, h.Correlation, upCorr
	p.NoResponse = s.pstream.Acks() == 0
	p.Reserve = AnswerReserve
	return s.pstream, nil
}
