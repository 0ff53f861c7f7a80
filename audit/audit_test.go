package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func counters(t *testing.T) (*metrics.Set, *metrics.Counter, *metrics.Counter) {
	s := metrics.NewSet()
	return s, s.NewCounter("dropped"), s.NewCounter("written")
}

const testKey = "0123456789abcdef-test-key"

// A record is one JSON line with the seed's fields; the topic is its keyed
// hash, never the name; the same topic under the same key hashes the same.
func TestTrailWritesOneHashedLine(t *testing.T) {
	var buf lockedBuf
	_, dropped, written := counters(t)
	tr := New(slog.NewJSONHandler(&buf, nil), 8, dropped, written)
	at := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	tr.Add(Record{Time: at, Cluster: "shop", API: "Produce", Decision: "refused", Cause: "acl", Tenant: "acme",
		Principal: "acme-orders-reader", Mechanism: "PLAIN", Topics: []string{"secret-plan"}, HashKey: testKey})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.Close(ctx)
	out := buf.String()
	if strings.Contains(out, "secret-plan") {
		t.Fatalf("the raw topic is written: %s", out)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatalf("not one JSON line: %q: %v", out, err)
	}
	want := map[string]any{"msg": Message, "level": "INFO", "host": "shop", "method": "KAFKA", "operation": "Produce",
		"decision": "refused", "code": "acl", "tenant": "acme", "principal": "acme-orders-reader", "mechanism": "PLAIN",
		"topic": HashTopic(testKey, "secret-plan"), "time": "2026-12-03T15:00:00Z"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v", k, line[k], v)
		}
	}
	if h := HashTopic(testKey, "secret-plan"); !strings.HasPrefix(h, HashPrefix) || len(h) != len(HashPrefix)+2*HashBytes ||
		h == HashTopic("another-key-of-16-bytes", "secret-plan") || h == HashTopic(testKey, "secret-plan2") {
		t.Errorf("hash %q: want hmac-sha256 of 16 bytes, keyed, one per topic", h)
	}
	if written.Get() != 1 || dropped.Get() != 0 {
		t.Errorf("written %d dropped %d, want 1 and 0", written.Get(), dropped.Get())
	}
}

// blockingHandler stands for a disk that does not answer.
type blockingHandler struct {
	slog.Handler
	entered chan struct{}
	release chan struct{}
}

func (b *blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return nil
}

// A sink that blocks never blocks Add: past the queue, records are dropped
// and counted, and Add returns at once.
func TestTrailFullQueueDropsWithoutBlocking(t *testing.T) {
	h := &blockingHandler{Handler: slog.NewJSONHandler(&lockedBuf{}, nil), entered: make(chan struct{}, 1), release: make(chan struct{})}
	_, dropped, written := counters(t)
	const size = 4
	tr := New(h, size, dropped, written)
	r := Record{Time: time.Now(), Cluster: "shop", API: "Metadata", Decision: "refused", Cause: "unknown_topic"}
	tr.Add(r)
	select { // the writer holds one record, blocked in the sink
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never reached the sink")
	}
	// The sink stays blocked until the test releases it: an Add that
	// waited for it would never return.
	accepted := 0
	added := make(chan struct{})
	go func() {
		defer close(added)
		for i := 0; i < 100; i++ {
			if tr.Add(r) {
				accepted++
			}
		}
	}()
	select {
	case <-added:
	case <-time.After(30 * time.Second):
		t.Fatal("Add blocks while the sink is blocked")
	}
	if accepted != size || dropped.Get() != uint64(100-size) {
		t.Errorf("accepted %d dropped %d, want %d and %d", accepted, dropped.Get(), size, 100-size)
	}
	close(h.release)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.Close(ctx)
	if written.Get() != uint64(1+size) {
		t.Errorf("written %d, want %d (the queue drained at Close)", written.Get(), 1+size)
	}
}

// Close returns at its deadline when the sink never answers.
func TestTrailCloseBounded(t *testing.T) {
	h := &blockingHandler{Handler: slog.NewJSONHandler(&lockedBuf{}, nil), entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(h.release)
	_, dropped, written := counters(t)
	tr := New(h, 4, dropped, written)
	tr.Add(Record{Time: time.Now()})
	<-h.entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() { tr.Close(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked on the sink past its deadline")
	}
	if tr.Add(Record{}) || dropped.Get() != 1 {
		t.Errorf("Add after Close: want dropped and counted, dropped %d", dropped.Get())
	}
}

// An administration request's topics are read off the loop from its body,
// and written hashed; past one, all of them (bounded) with their count.
func TestAdministrationTopics(t *testing.T) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 5
	for _, n := range []string{"secret-a", "secret-b"} {
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = n, 1, 1
		req.Topics = append(req.Topics, tp)
	}
	body := req.AppendTo(nil)
	if got := RequestTopics(req.Key(), req.Version, body); strings.Join(got, ",") != "secret-a,secret-b" {
		t.Fatalf("topics %q", got)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "secret-c"},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
	if got := RequestTopics(dc.Key(), dc.Version, dc.AppendTo(nil)); strings.Join(got, ",") != "secret-c" {
		t.Fatalf("DescribeConfigs topics %q", got)
	}
	if RequestTopics(0, 9, []byte{1, 2, 3}) != nil || RequestTopics(19, 5, []byte{1}) != nil {
		t.Error("a data API or an unreadable body: want no topic")
	}

	var buf lockedBuf
	_, dropped, written := counters(t)
	tr := New(slog.NewJSONHandler(&buf, nil), 8, dropped, written)
	tr.Add(Record{Time: time.Now(), Cluster: "shop", API: "CreateTopics", Decision: "allowed", Cause: "none",
		Admin: true, Key: req.Key(), Version: req.Version, Body: body, HashKey: testKey})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.Close(ctx)
	out := buf.String()
	if strings.Contains(out, "secret-") {
		t.Fatalf("a raw topic is written: %s", out)
	}
	var line struct {
		Topic  string   `json:"topic"`
		Topics []string `json:"topics"`
		Count  int      `json:"topic_count"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatal(err)
	}
	if line.Topic != HashTopic(testKey, "secret-a") || len(line.Topics) != 2 || line.Topics[1] != HashTopic(testKey, "secret-b") || line.Count != 2 {
		t.Errorf("line %+v", line)
	}
}

func TestParseMode(t *testing.T) {
	for s, m := range map[string]Mode{"": Off, "refusals": Refusals, "all": All, "some": Off} {
		if ParseMode(s) != m {
			t.Errorf("ParseMode(%q) = %d, want %d", s, ParseMode(s), m)
		}
	}
}

// The hash is the README's: HMAC-SHA256 of the name under the key, its
// first 16 bytes in hex (the value openssl dgst -sha256 -hmac gives).
func TestHashTopicKnownAnswer(t *testing.T) {
	// printf %s orders | openssl dgst -sha256 -hmac audit-topic-key-of-the-test-0123 | awk '{print $NF}' | cut -c1-32
	if got, want := HashTopic("audit-topic-key-of-the-test-0123", "orders"), "hmac-sha256:87bb6ebae86f1144179d9227e5fba907"; got != want {
		t.Errorf("HashTopic = %s, want %s", got, want)
	}
}

// Issue 24.7: a record of a principal someone acted for names the actors,
// the current one first; a record of nobody's actor has no actors field.
func TestTrailWritesTheActors(t *testing.T) {
	var buf lockedBuf
	_, dropped, written := counters(t)
	tr := New(slog.NewJSONHandler(&buf, nil), 8, dropped, written)
	tr.Add(Record{Time: time.Now(), Cluster: "shop", API: "Produce", Decision: "refused", Cause: "acl", Tenant: "acme",
		Principal: "billing", Mechanism: "OAUTHBEARER", Actors: []string{"scheduler", "ci-runner"}, HashKey: testKey})
	tr.Add(Record{Time: time.Now(), Cluster: "shop", API: "Produce", Decision: "refused", Cause: "acl", Tenant: "acme",
		Principal: "billing", Mechanism: "OAUTHBEARER", HashKey: testKey})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.Close(ctx)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(lines), buf.String())
	}
	var acted, alone map[string]any
	if json.Unmarshal([]byte(lines[0]), &acted) != nil || json.Unmarshal([]byte(lines[1]), &alone) != nil {
		t.Fatalf("not JSON lines: %q", lines)
	}
	if got, ok := acted["actors"].([]any); !ok || len(got) != 2 || got[0] != "scheduler" || got[1] != "ci-runner" || acted["principal"] != "billing" {
		t.Fatalf("the acted-for record: %v", acted)
	}
	if _, ok := alone["actors"]; ok {
		t.Fatalf("a record of nobody's actor names actors: %v", alone)
	}
}

// stepLimiter lets n records through, then refuses; once reopened, its
// first says how many it refused.
type stepLimiter struct {
	n, refused int
}

func (l *stepLimiter) Allow() (bool, int) {
	if l.n == 0 {
		l.refused++
		return false, 0
	}
	l.n--
	d := l.refused
	l.refused = 0
	return true, d
}

// Issue 33.3: anonymous records pass the trail's bound, the rest counted
// (never queued), and the next line written says how many were left out;
// an authenticated record is never bounded.
func TestTrailLimitsAnonymousRecords(t *testing.T) {
	var buf lockedBuf
	s, dropped, written := counters(t)
	limited := s.NewCounter("limited")
	tr := New(slog.NewJSONHandler(&buf, nil), 64, dropped, written)
	lim := &stepLimiter{n: 3}
	tr.Limit(lim, limited)
	anon := Record{Cluster: "shop", API: "SaslAuthenticate", Decision: "refused", Cause: "authentication", Anonymous: true}
	for range 10 {
		tr.Add(anon)
	}
	for range 5 {
		if !tr.Add(Record{Cluster: "shop", API: "Produce", Decision: "refused", Cause: "acl", Principal: "acme-app"}) {
			t.Fatal("an authenticated record refused by the anonymous bound")
		}
	}
	lim.n = 1
	tr.Add(anon)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr.Close(ctx)
	if limited.Get() != 7 || dropped.Get() != 0 || written.Get() != 9 {
		t.Fatalf("limited %d, dropped %d, written %d; want 7, 0, 9", limited.Get(), dropped.Get(), written.Get())
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["lines_dropped"] != float64(7) || last["operation"] != "SaslAuthenticate" {
		t.Fatalf("the line after the bound: %v, want lines_dropped 7", last)
	}
}
