// Nothing leaks (D9, N2): the poison planted in every request and answer,
// the checks on what crosses, and the test that runs every case of
// leakCases (leak_cases_test.go) for every served key and version.

package decide

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The property of D9 and N2, for every API the table serves: a request
// carrying tenant acme's names reaches the broker with acme's physical
// names only, and the broker's answer, even one that mixes in another
// tenant's names (globex) and the broker's own words, reaches the client
// with none of them:
//
//   - no name of globex (topics, groups, transactional ids);
//   - no physical name of acme either: every name is mapped back;
//   - not the physical cluster id, nor a broker's host;
//   - no ErrorMessage (the code passes, the words don't), no ClientHost;
//   - no unknown tagged field, in either direction.
//
// The table is closed: a served key without a case here fails the test, so
// that a new API cannot slip through untested.

const (
	leakWords   = "secret words"
	leakCluster = "PHYSICAL-ID"
	leakHost    = "kafka-0.internal"
	leakClient  = "/10.1.2.3"
	leakTag     = 1000 // a tag no message knows
)

// leakForbidden may never appear in an answer to acme.
var leakForbidden = []string{
	"globex", leakCluster, leakHost, leakWords, "10.1.2.3",
	"acme.orders", "acme.audit", "acme.~g.", "acme.~t.",
}

// The client's names in requests, and the physical names the broker may
// see. A short name left in a forwarded request, once the physical names are
// taken out, was not mapped.
var (
	leakShort    = []string{"orders", "audit", "tx-orders", "app-1", "g1"}
	leakPhysical = []string{"acme.~t.tx-orders", "acme.~g.g1", "acme.orders", "acme.audit", "acme.app-1"}
)

// leakPair is one request of acme and the broker's answer to it.
type leakPair struct {
	req  kmsg.Request
	resp kmsg.Response
	// want: strings the client must find in the answer (the acme names it
	// asked about), so that an answer emptied of everything fails too.
	want []string
}

var (
	leakTagsType = reflect.TypeOf(kmsg.Tags{})
	leakStrPtr   = reflect.TypeOf((*string)(nil))
	leakStr      = reflect.TypeOf("")
)

// leakPoison walks a kmsg message and plants what must never cross: an
// unknown tagged field in every struct that can carry one and, in an
// answer, the broker's words, the member's address, the physical cluster id
// and the brokers' hosts wherever the message has room for them.
func leakPoison(v reflect.Value, answer bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			leakPoison(v.Elem(), answer)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := 0; i < v.Len(); i++ {
				leakPoison(v.Index(i), answer)
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f, sf := v.Field(i), t.Field(i)
			if !sf.IsExported() {
				continue
			}
			if sf.Type == leakTagsType {
				tags := f.Addr().Interface().(*kmsg.Tags)
				tags.Set(leakTag, []byte(leakWords))
				continue
			}
			if answer {
				val := ""
				switch sf.Name {
				case "ErrorMessage":
					val = leakWords
				case "ClientHost":
					val = leakClient
				case "ClusterID":
					val = leakCluster
				case "Host":
					val = leakHost
				}
				if val != "" {
					switch sf.Type {
					case leakStr:
						f.SetString(val)
						continue
					case leakStrPtr:
						f.Set(reflect.ValueOf(&val))
						continue
					}
				}
			}
			leakPoison(f, answer)
		}
	}
}

// leakFrameBytes joins the rewriter's output and strips the size prefix.
func leakFrameBytes(t *testing.T, s *Session) []byte {
	t.Helper()
	var b []byte
	for _, sl := range s.RW.Vec.Slices() {
		b = append(b, sl...)
	}
	if len(b) < codec.SizeLen || int(codec.FrameSize(b)) != len(b)-codec.SizeLen {
		t.Fatalf("bad size prefix in %d bytes", len(b))
	}
	return b[codec.SizeLen:]
}

// leakCheckForwarded: the broker sees acme's physical names only.
func leakCheckForwarded(t *testing.T, b []byte) {
	t.Helper()
	for _, bad := range []string{"globex", leakWords} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("forwarded request holds %q: %q", bad, b)
		}
	}
	rest := b
	for _, phys := range leakPhysical {
		rest = bytes.ReplaceAll(rest, []byte(phys), []byte("#"))
	}
	for _, short := range leakShort {
		if bytes.Contains(rest, []byte(short)) {
			t.Errorf("forwarded request holds the client's name %q unmapped: %q", short, b)
		}
	}
}

// leakCheckAnswer: the client sees nothing of the broker's or globex's.
func leakCheckAnswer(t *testing.T, b []byte, want []string) {
	t.Helper()
	for _, bad := range leakForbidden {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("answer holds %q: %q", bad, b)
		}
	}
	for _, w := range want {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("answer lacks %q: %q", w, b)
		}
	}
}

func TestNothingLeaks(t *testing.T) {
	served := 0
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if kind, _ := KindOf(k); kind != Served {
			continue
		}
		served++
		build, ok := leakCases[k]
		if !ok {
			t.Errorf("%s (%d) is served without a case in leakCases: write one", Name(k), k)
			continue
		}
		t.Run(Name(k), func(t *testing.T) {
			s := fuzzSession(t, true)
			lo, hi, ok := s.Versions.Range(k)
			if !ok {
				t.Fatalf("%s not announced", Name(k))
			}
			for v := lo; v <= hi; v++ {
				for i, pair := range build(v) {
					leakRun(t, s, k, v, i, pair)
				}
			}
		})
	}
	if served == 0 {
		t.Fatal("no served key")
	}
}

func leakRun(t *testing.T, s *Session, k, v int16, i int, pair leakPair) {
	t.Helper()
	where := Name(k) + " v" + itoa32(int32(v)) + " #" + itoa32(int32(i))
	pair.req.SetVersion(v)
	leakPoison(reflect.ValueOf(pair.req), false)
	fr := reqFrame(pair.req, 41, "app-1")
	h, err := codec.ParseRequestHeader(fr)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var p Pending
	out := s.Request(&h, fr, txnUpCorr, testGrant, &p)
	switch out {
	case Forward:
	case Answer:
		// Refused by the gateway: its own answer must not leak either.
		leakCheckAnswer(t, leakFrameBytes(t, s), nil)
		t.Logf("%s: answered by the gateway (%s)", where, p.Cause)
		return
	default:
		t.Fatalf("%s: outcome %d (%s)", where, out, p.Cause)
	}
	b := leakFrameBytes(t, s)
	fh, err := codec.ParseRequestHeader(b)
	if err != nil || fh.Key != k || fh.Version != v {
		t.Fatalf("%s: forwarded header %+v, %v", where, fh, err)
	}
	fw := kmsg.RequestForKey(k)
	fw.SetVersion(v)
	if err := fw.ReadFrom(b[fh.BodyOffset:]); err != nil {
		t.Fatalf("%s: forwarded request does not decode: %v", where, err)
	}
	t.Run(where+"/request", func(t *testing.T) { leakCheckForwarded(t, b) })

	resp := pair.resp
	resp.SetVersion(v)
	leakPoison(reflect.ValueOf(resp), true)
	rf := codec.AppendResponseHeader(nil, k, v, p.UpCorr)
	rf = resp.AppendTo(rf)
	if err := s.Response(&p, rf); err != nil {
		t.Fatalf("%s: the broker's answer: %v", where, err)
	}
	ab := leakFrameBytes(t, s)
	corr, body, err := codec.ParseResponseHeader(ab, k, v)
	if err != nil || corr != p.ClientCorr {
		t.Fatalf("%s: answer header: corr %d, %v", where, corr, err)
	}
	got := kmsg.ResponseForKey(k)
	got.SetVersion(v)
	if err := got.ReadFrom(body); err != nil {
		t.Fatalf("%s: answer does not decode: %v", where, err)
	}
	t.Run(where+"/answer", func(t *testing.T) { leakCheckAnswer(t, ab, pair.want) })
}

// The poison reaches what it should: a poisoned answer holds every
// forbidden string of its kind (else the property test would prove
// nothing).
func TestLeakPoisonPlants(t *testing.T) {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = 5
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.Members = append(g.Members, kmsg.NewDescribeGroupsResponseGroupMember())
	resp.Groups = append(resp.Groups, g)
	leakPoison(reflect.ValueOf(resp), true)
	b := resp.AppendTo(nil)
	for _, s := range []string{leakWords, "10.1.2.3"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("poisoned DescribeGroups lacks %q", s)
		}
	}
	md := kmsg.NewPtrMetadataResponse()
	md.Version = 12
	md.Brokers = append(md.Brokers, kmsg.NewMetadataResponseBroker())
	leakPoison(reflect.ValueOf(md), true)
	b = md.AppendTo(nil)
	for _, s := range []string{leakCluster, leakHost, leakWords} {
		if !strings.Contains(string(b), s) {
			t.Errorf("poisoned Metadata lacks %q", s)
		}
	}
}
