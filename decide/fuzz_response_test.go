package decide

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fuzzing of Session.Response, for every key the table serves:
//
//	go test ./decide -run '^$' -fuzz '^FuzzSessionResponse$' -fuzztime 60s
//
// A real request of the key (leakCases: acme's names, at a version the
// session announces) prepares the Pending as on a connection; arbitrary
// bytes then stand for the broker's answer. The seeds are the leak cases'
// answers, as they are and poisoned (globex's names, the broker's words,
// hosts, cluster id, unknown tags). Invariants: no panic; an error (the
// connection closes) or an answer to the client's correlation id that
// kmsg decodes, of a size bounded by the broker's; and no name of another
// tenant: every name the answer holds is one of the view's short names, a
// name the client wrote itself, or a name the broker gave in the tenant's
// namespaces (<tenant>.~g., <tenant>.~t., <tenant>.), mapped back; no
// ErrorMessage, ClientHost, documentation, rack; brokers and cluster id
// the gateway's. What remains once the tenant's own opaque data (records,
// member ids, protocol bytes, committed metadata, configuration values) and
// the names checked in namespaces are set aside never holds "globex", a
// physical name, the broker's words or addresses, whatever the broker
// sent; and no unknown tagged field crosses.

// servedKeys are the keys the table serves, in order.
func servedKeys() []int16 {
	var out []int16
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if kind, _ := KindOf(k); kind == Served {
			out = append(out, k)
		}
	}
	return out
}

func FuzzSessionResponse(f *testing.F) {
	keys := servedKeys()
	s := fuzzSession(f, true)
	for ki, k := range keys {
		build, ok := leakCases[k]
		if !ok {
			f.Fatalf("%s is served without a case in leakCases", Name(k))
		}
		lo, hi, ok := s.Versions.Range(k)
		if !ok {
			f.Fatalf("%s not announced", Name(k))
		}
		for v := lo; v <= hi; v++ {
			for i, pair := range build(v) {
				resp := pair.resp
				resp.SetVersion(v)
				f.Add(uint8(ki), uint8(v), uint8(i), resp.AppendTo(nil))
				leakPoison(reflect.ValueOf(resp), true)
				f.Add(uint8(ki), uint8(v), uint8(i), resp.AppendTo(nil))
			}
		}
	}
	f.Add(uint8(0), uint8(9), uint8(0), []byte{})
	f.Add(uint8(3), uint8(12), uint8(0), bytes.Repeat([]byte{0xff}, 64))

	f.Fuzz(func(t *testing.T, ki, vb, pi uint8, body []byte) {
		k := keys[int(ki)%len(keys)]
		v := int16(vb)
		s := fuzzSession(t, true)
		if lo, hi, _ := s.Versions.Range(k); v < lo || v > hi {
			return
		}
		pairs := leakCases[k](v)
		pair := pairs[int(pi)%len(pairs)]
		pair.req.SetVersion(v)
		fr := reqFrame(pair.req, 41, "app-1")
		h, err := codec.ParseRequestHeader(fr)
		if err != nil {
			t.Fatal(err)
		}
		var p Pending
		if out := s.Request(&h, fr, 77, testGrant, &p); out != Forward {
			t.Fatalf("%s v%d: the leak case is not forwarded: outcome %d (%s)", Name(k), v, out, p.Cause)
		}
		if p.NoResponse {
			return
		}
		rf := codec.AppendResponseHeader(nil, k, v, p.UpCorr)
		rf = append(rf, body...)
		if err := s.Response(&p, rf); err != nil {
			return // the connection closes
		}
		var ab []byte
		for _, sl := range s.RW.Vec.Slices() {
			ab = append(ab, sl...)
		}
		if len(ab) < codec.SizeLen || int(codec.FrameSize(ab)) != len(ab)-codec.SizeLen {
			t.Fatalf("%s v%d: bad size prefix in %d bytes", Name(k), v, len(ab))
		}
		ab = ab[codec.SizeLen:]
		corr, rb, err := codec.ParseResponseHeader(ab, k, v)
		if err != nil || corr != p.ClientCorr {
			t.Fatalf("%s v%d: answer header: corr %d, %v", Name(k), v, corr, err)
		}
		if len(ab) > 2*len(rf)+64<<10 {
			t.Fatalf("%s v%d: an answer of %d bytes for a broker answer of %d", Name(k), v, len(ab), len(rf))
		}
		resp := kmsg.ResponseForKey(k)
		resp.SetVersion(v)
		if err := resp.ReadFrom(rb); err != nil {
			t.Fatalf("%s v%d: the answer does not decode: %v", Name(k), v, err)
		}
		checkAnswerNames(t, Name(k)+" v"+itoa32(int32(v)), s, resp, body, fr)
	})
}

// The fields of the answers' strings, by what they hold.
var (
	// The tenant's own data, opaque to the gateway: set aside.
	answerOpaque = map[string]bool{
		"MemberID": true, "InstanceID": true, "LeaderID": true, "Protocol": true, "ProtocolType": true,
		"State": true, "GroupState": true, "GroupType": true,
		// OffsetFetch: the committed metadata
		"Metadata": true,
		// configurations (CreateTopics, DescribeConfigs)
		"Name": true, "Value": true,
	}
	// Never shown.
	answerNever = map[string]bool{"ErrorMessage": true, "ClientHost": true, "Documentation": true, "Rack": true}
)

// checkAnswerNames holds a decoded answer to its names (see FuzzSessionResponse).
func checkAnswerNames(t *testing.T, where string, s *Session, resp kmsg.Response, brokerBody, request []byte) {
	t.Helper()
	n := &answerNames{t: t, where: where, s: s, brokerBody: brokerBody, request: request}
	n.walk(reflect.ValueOf(resp), "")
	for _, str := range n.rest {
		for _, bad := range leakForbidden {
			if strings.Contains(str, bad) {
				t.Fatalf("%s: the answer holds %q", where, str)
			}
		}
	}
}

// answerNames walks one decoded answer, field by field, and checks each
// name against the request, the broker's body and the session's view.
type answerNames struct {
	t          *testing.T
	where      string
	s          *Session
	brokerBody []byte
	request    []byte
	// rest keeps each name checked unless it is set aside (the tenant's
	// opaque data, a name checked in a namespace).
	rest []string
}

// asked: the client named it in its request.
func (n *answerNames) asked(name string) bool {
	return name != "" && bytes.Contains(n.request, []byte(name))
}

// inBody: the broker's answer holds it under prefix.
func (n *answerNames) inBody(prefix, name string) bool {
	return bytes.Contains(n.brokerBody, []byte(prefix+name))
}

// short: a topic of the session's view.
func (n *answerNames) short(name string) bool {
	_, ok := n.s.View.Physical(name)
	return ok
}

// walk visits every exported field of v, field naming the struct field the
// value is (or is an element of): strings and string pointers are checked,
// unknown tags and configuration synonyms refused, byte slices skipped.
func (n *answerNames) walk(v reflect.Value, field string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Elem().Kind() == reflect.String {
			if answerNever[field] {
				n.t.Fatalf("%s: %s %q answered", n.where, field, v.Elem().String())
			}
			n.checkName(field, v.Elem().String())
			return
		}
		n.walk(v.Elem(), field)
	case reflect.Struct:
		if v.Type() == leakTagsType {
			if v.Addr().Interface().(*kmsg.Tags).Len() > 0 {
				n.t.Fatalf("%s: an unknown tagged field answered", n.where)
			}
			return
		}
		tt := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if tt.Field(i).IsExported() {
				n.walk(v.Field(i), tt.Field(i).Name)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // records, consumer protocol bytes: the tenant's data
		}
		if field == "ConfigSynonyms" && v.Len() > 0 {
			n.t.Fatalf("%s: configuration synonyms answered", n.where)
		}
		for i := 0; i < v.Len(); i++ {
			n.walk(v.Index(i), field)
		}
	case reflect.String:
		if answerNever[field] && v.String() != "" {
			n.t.Fatalf("%s: %s %q answered", n.where, field, v.String())
		}
		n.checkName(field, v.String())
	}
}

// checkName checks one name by the field that holds it, and keeps it in
// rest unless it is set aside.
func (n *answerNames) checkName(field, name string) {
	n.t.Helper()
	if answerOpaque[field] || name == "" {
		return
	}
	switch field {
	case "Topic":
		if !n.short(name) && !n.asked(name) {
			n.t.Fatalf("%s: topic %q answered", n.where, name)
		}
	case "ResourceName":
		if !n.short(name) && !n.asked(name) {
			n.t.Fatalf("%s: resource %q answered", n.where, name)
		}
	case "Group":
		if !n.inBody("acme.~g.", name) && !n.asked(name) {
			n.t.Fatalf("%s: group %q answered, not the tenant's", n.where, name)
		}
		return
	case "Key", "TransactionalID":
		if !n.inBody("acme.~g.", name) && !n.inBody("acme.~t.", name) && !n.asked(name) {
			n.t.Fatalf("%s: %s %q answered, not the tenant's", n.where, field, name)
		}
		return
	case "ClientID":
		if !n.inBody("acme.", name) {
			n.t.Fatalf("%s: client id %q answered, not the tenant's", n.where, name)
		}
		return
	case "Host":
		if name != "gw.example" {
			n.t.Fatalf("%s: host %q answered", n.where, name)
		}
	case "ClusterID":
		if name != "shop" {
			n.t.Fatalf("%s: cluster id %q answered", n.where, name)
		}
	}
	n.rest = append(n.rest, name)
}
