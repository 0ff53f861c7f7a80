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

// forwardKmsg encodes req (a rewritten request) towards the broker into s.RW.Vec.
func (s *Session) forwardKmsg(h *codec.RequestHeader, upCorr int32, req kmsg.Request) {
	scrub(req, false)
	s.RW.Vec.Reset()
	o := codec.AppendRequestHeader(s.RW.Vec.Own, h.Key, h.Version, upCorr, s.cid, h.ClientNull, h.Flexible)
	s.RW.Vec.Own = req.AppendTo(o)
}

// answerKmsg encodes resp as the answer to the client's correlation id into s.RW.Vec.
func (s *Session) answerKmsg(p *Pending, resp kmsg.Response) {
	scrub(resp, true)
	s.RW.Vec.Reset()
	o := codec.AppendResponseHeader(s.RW.Vec.Own, p.Key, p.Version, p.ClientCorr)
	s.RW.Vec.Own = resp.AppendTo(o)
}

// decodeRequest decodes a request body of h's key and version.
func decodeRequest(h *codec.RequestHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.Key)
	req.SetVersion(h.Version)
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	return req, nil
}

// decodeResponse decodes a response body of p's key and version.
func decodeResponse(p *Pending, body []byte) (kmsg.Response, error) {
	resp := kmsg.ResponseForKey(p.Key)
	resp.SetVersion(p.Version)
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// keepReceiveTopics keeps the topics a receive operation opens, renamed to
// their physical names, and records the others in r with their code (for
// the APIs that read: ListOffsets, OffsetForLeaderEpoch). name and parts
// reach into one kmsg topic type.
func keepReceiveTopics[T any](v *View, topics []T, name func(*T) *string, parts func(*T) []int32, r *refusals) []T {
	kept := topics[:0]
	for i := range topics {
		t := &topics[i]
		n := name(t)
		phys, code := v.FetchTopic([]byte(*n))
		if code != 0 {
			r.topic(*n, code, parts(t))
			continue
		}
		*n = string(phys)
		kept = append(kept, *t)
	}
	return kept
}
