package decide

import (
	"reflect"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The APIs off the hot path are rewritten by decoding them with kmsg,
// changing names, and encoding them again. scrub enforces D9 on every such
// message, whatever its shape: unknown tagged fields are dropped both ways,
// and in answers the broker's words (ErrorMessage) never cross — the code
// passes, the words don't.
//
// What such an API writes is its own judgement; the rest is here, once:
// serve registers it (the request decoded into its kmsg type, decodeReq;
// the answer decoded, rewritten and encoded, rewriteAnswer; pass for an
// answer that names nothing of the tenant's), forward and answer/refuse/
// answerAlone end a judgement, keep/mapBack/keepTopics filter entries both
// ways, and appendRefused/appendEach merge the refusals into an answer.

var (
	tagsType   = reflect.TypeOf(kmsg.Tags{})
	strPtrType = reflect.TypeOf((*string)(nil))
)

func scrub(v any, answer bool) { scrubValue(reflect.ValueOf(v), answer) }

func scrubValue(v reflect.Value, answer bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			scrubValue(v.Elem(), answer)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			sf := t.Field(i)
			switch {
			case !sf.IsExported():
			case sf.Type == tagsType:
				f.Set(reflect.Zero(tagsType))
			case answer && sf.Name == "ErrorMessage" && sf.Type == strPtrType:
				f.Set(reflect.Zero(strPtrType))
			default:
				scrubValue(f, answer)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			scrubValue(v.Index(i), answer)
		}
	}
}

// request and response are the kmsg types of a request and an answer, by
// pointer to T.
type (
	request[T any] interface {
		*T
		kmsg.Request
		Default()
	}
	response[T any] interface {
		*T
		kmsg.Response
		Default()
	}
)

// serve registers an API rewritten with kmsg: judge decides on the
// request decoded into its type (decodeReq); rewrite maps the broker's
// answer, decoded into its type, back for the client (rewriteAnswer).
func serve[Q any, PQ request[Q], R any, PR response[R]](key, min, max int16,
	judge func(*Session, *codec.RequestHeader, PQ, *Pending) Outcome, rewrite func(*Session, *Pending, PR)) {
	reg(key, Served, min, max, func(s *Session, h *codec.RequestHeader, body []byte, p *Pending) Outcome {
		req, ok := decodeReq[Q, PQ](h, body, p)
		if !ok {
			return Disconnect
		}
		return judge(s, h, req, p)
	}, rewriteAnswer(rewrite))
}

// decodeReq decodes a request body of h's version into its kmsg type;
// false: kmsg cannot read it, a Disconnect, its cause in p.
func decodeReq[T any, PT request[T]](h *codec.RequestHeader, body []byte, p *Pending) (PT, bool) {
	req := PT(new(T))
	req.Default()
	req.SetVersion(h.Version)
	if err := req.ReadFrom(body); err != nil {
		p.Cause = "malformed " + Name(h.Key)
		return nil, false
	}
	return req, true
}

// newAnswer is an answer of p's version, as kmsg builds it.
func newAnswer[T any, PT response[T]](p *Pending) PT {
	resp := PT(new(T))
	resp.Default()
	resp.SetVersion(p.Version)
	return resp
}

// rewriteAnswer decodes the broker's answer into its kmsg type, lets
// rewrite map it back, and encodes it for the client (scrubbed, D9). An
// answer kmsg cannot read closes the connection (the error).
func rewriteAnswer[T any, PT response[T]](rewrite func(*Session, *Pending, PT)) respFunc {
	return func(s *Session, p *Pending, body []byte) error {
		resp := newAnswer[T, PT](p)
		if err := resp.ReadFrom(body); err != nil {
			return err
		}
		if t, ok := any(resp).(kmsg.ThrottleResponse); ok {
			p.BrokerThrottle, _ = t.Throttle()
		}
		rewrite(s, p, resp)
		s.answerKmsg(p, resp)
		return nil
	}
}

// pass is the rewrite of an answer that names nothing of the tenant's: it
// crosses as the broker gave it, scrubbed (D9).
func pass[PT kmsg.Response](*Session, *Pending, PT) {}

// forward encodes req (judged and rewritten) towards the broker into
// s.RW.Vec, scrubbed (D9).
func (s *Session) forward(h *codec.RequestHeader, p *Pending, req kmsg.Request) Outcome {
	scrub(req, false)
	s.RW.Vec.Reset()
	o := codec.AppendRequestHeader(s.RW.Vec.Own, h.Key, h.Version, p.UpCorr, s.cid, h.ClientNull, h.Flexible)
	s.RW.Vec.Own = req.AppendTo(o)
	return Forward
}

// answer encodes the gateway's own answer: fill writes it into an empty
// answer of the request's version.
func answer[T any, PT response[T]](s *Session, p *Pending, fill func(PT)) Outcome {
	resp := newAnswer[T, PT](p)
	fill(resp)
	s.answerKmsg(p, resp)
	return Answer
}

// refuse answers a request the gateway refuses whole with code; fill sets
// the code where the answer holds it.
func refuse[T any, PT response[T]](s *Session, p *Pending, code int16, fill func(PT)) Outcome {
	p.Cause = causeOf(code)
	return answer(s, p, fill)
}

// answerAlone answers a request of which nothing is left to forward: what
// rewrite makes of an empty broker answer, the refusals merged.
func answerAlone[T any, PT response[T]](s *Session, p *Pending, rewrite func(*Session, *Pending, PT)) Outcome {
	return answer(s, p, func(resp PT) { rewrite(s, p, resp) })
}

// answerKmsg encodes resp as the answer to the client's correlation id into s.RW.Vec.
func (s *Session) answerKmsg(p *Pending, resp kmsg.Response) {
	scrub(resp, true)
	raiseThrottle(resp, p.Throttle)
	s.RW.Vec.Reset()
	o := codec.AppendResponseHeader(s.RW.Vec.Own, p.Key, p.Version, p.ClientCorr)
	s.RW.Vec.Own = resp.AppendTo(o)
}

// keep keeps, in order and in entries' own array, the entries ok accepts
// (it may rewrite them).
func keep[T any](entries []T, ok func(*T) bool) []T {
	kept := entries[:0]
	for i := range entries {
		if ok(&entries[i]) {
			kept = append(kept, entries[i])
		}
	}
	return kept
}

// mapBack keeps the entries of a broker's answer whose name back maps,
// renamed; the others are left out: no name that is not the session's
// crosses (N2). name reaches into one kmsg entry type.
func mapBack[T any](entries []T, name func(*T) *string, back func(string) (string, bool)) []T {
	return keep(entries, func(e *T) bool {
		n := name(e)
		short, ok := back(*n)
		if ok {
			*n = short
		}
		return ok
	})
}

// topicJudge gives a topic's physical name, or the code refusing it.
type topicJudge func(short string) (string, int16)

// receiveTopic judges a topic a request reads (D5).
func (s *Session) receiveTopic(short string) (string, int16) {
	phys, code := s.View.FetchTopic([]byte(short))
	return string(phys), code
}

// adminTopic judges a topic a request administers (D8); outside is the
// code of a topic outside the view.
func (s *Session) adminTopic(outside int16) topicJudge {
	return func(short string) (string, int16) { return s.View.AdminTopic(short, outside) }
}

// unless is judge, or, when code is not 0 (the whole request refused),
// a judge refusing every topic with code.
func unless(code int16, judge topicJudge) topicJudge {
	if code == 0 {
		return judge
	}
	return func(string) (string, int16) { return "", code }
}

// keepTopics keeps the topics of a request judge opens, renamed to their
// physical names, and hands the others to drop with their code and
// partitions. name and parts reach into one kmsg topic type (parts nil:
// the API answers by topic).
func keepTopics[T any](topics []T, name func(*T) *string, parts func(*T) []int32, judge topicJudge,
	drop func(name string, code int16, partitions []int32)) []T {
	return keep(topics, func(t *T) bool {
		n := name(t)
		phys, code := judge(*n)
		if code != 0 {
			var ps []int32
			if parts != nil {
				ps = parts(t)
			}
			drop(*n, code, ps)
			return false
		}
		*n = phys
		return true
	})
}

// partitionsOf lists the partition numbers of a kmsg partition type.
func partitionsOf[P any](ps []P, num func(*P) int32) []int32 {
	var out []int32
	for i := range ps {
		out = append(out, num(&ps[i]))
	}
	return out
}

// appendRefused appends the answer of each refused topic: topic makes the
// API's answer topic, part each of its partitions, answered the topic's code.
func appendRefused[T, P any](dst []T, refused []refusal, topic func(name string, parts []P) T, part func(partition int32, code int16) P) []T {
	for _, r := range refused {
		var ps []P
		for _, n := range r.partitions {
			ps = append(ps, part(n, r.code))
		}
		dst = append(dst, topic(r.name, ps))
	}
	return dst
}

// appendEach appends what entry makes of each of src (the refusals of the
// APIs that answer by name).
func appendEach[T, E any](dst []T, src []E, entry func(*E) T) []T {
	for i := range src {
		dst = append(dst, entry(&src[i]))
	}
	return dst
}
