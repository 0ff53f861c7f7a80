// Package audit writes the audit trail of the gateway's decisions (SPEC O3,
// seed 001 "Signaux : métriques, traces, audit"): each refused request and,
// with audit.decisions: all, each administration request, as one structured
// line (log/slog, JSON under the service) with host = the virtual cluster,
// method = KAFKA, operation = the API, code = the cause, the tenant, the
// principal and the topic hashed (never the topic itself).
//
// The connections' loops never write: Add puts a Record in a bounded queue
// and returns at once; one goroutine formats and writes. A queue that is
// full (a disk or a journal slower than the refusals) drops the record and
// counts it: a slow sink never stalls a connection. A record of a peer not
// authenticated yet (Record.Anonymous) is also bounded in rate (Limit): an
// anonymous flood writes a few lines a second, the rest counted.
package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Mode is what audit.decisions writes.
type Mode uint8

const (
	// Off: no audit key in flexway.yaml; nothing is written.
	Off Mode = iota
	// Refusals: every refused request (any API).
	Refusals
	// All: every refused request and every administration request allowed.
	All
)

// ParseMode reads audit.decisions ("" is Off).
func ParseMode(s string) Mode {
	switch s {
	case "refusals":
		return Refusals
	case "all":
		return All
	}
	return Off
}

// Message is the message of every audit line: what to filter on in a
// journal that holds the logs too.
const Message = "kafka audit"

// Method is the method of every Kafka record (HTTP's would be GET, POST...).
const Method = "KAFKA"

// maxTopics bounds the topics hashed into one line (an administration
// request may name hundreds).
const maxTopics = 16

// Record is one decision to write. Its strings are the loop's (the cluster's
// name, the identity's): never modified after Add.
type Record struct {
	Time      time.Time
	Cluster   string // host
	API       string // operation: the API's name (decide.Name)
	Decision  string // allowed | refused
	Cause     string // code: the cause of the seed's closed list, "none" when allowed
	Tenant    string
	Principal string // the key's id, the certificate's id, the token's sub; the user named for an authentication refused
	Mechanism string
	// Actors: a token's act chain (RFC 8693), the current actor first, for
	// a principal someone acted for (issue 24.7); nil otherwise.
	Actors []string
	// Topics by the client's names: hashed by the writer, never written.
	Topics []string
	// Admin, for an administration request: its key, version and body
	// (a copy), read by the writer for the topics it names (kept off the
	// loop: administration is rare, parsing it is not free).
	Admin        bool
	Key, Version int16
	Body         []byte
	// HashKey keys the topic's hash (audit.topic_key).
	HashKey string
	// Anonymous: the connection was not authenticated (its principal,
	// if any, is only what it claimed): the record passes Limit's bound.
	Anonymous bool
	// Dropped is how many anonymous records the bound left out since the
	// last one written (set by Add; written as lines_dropped).
	Dropped int
}

// Limiter lets so many records a second through (signals.RateLimiter):
// ok, and how many it refused before this one.
type Limiter interface {
	Allow() (ok bool, dropped int)
}

// Trail is the bounded queue and its writer.
type Trail struct {
	h       slog.Handler
	q       chan Record
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
	once    sync.Once
	dropped *metrics.Counter
	written *metrics.Counter
	anon    Limiter          // nil: anonymous records unbounded
	limited *metrics.Counter // anonymous records anon left out

	// The writer's own (one goroutine): the HMAC of the last key.
	mac    hash.Hash
	macKey string
	sum    []byte
}

// New starts a trail writing to h, its queue holding size records.
// dropped counts what a full queue drops, written what was written.
func New(h slog.Handler, size int, dropped, written *metrics.Counter) *Trail {
	if size < 1 {
		size = 1
	}
	t := &Trail{h: h, q: make(chan Record, size), stop: make(chan struct{}), done: make(chan struct{}),
		dropped: dropped, written: written}
	go t.run()
	return t
}

// Limit bounds the anonymous records (Record.Anonymous) to what l lets
// through; limited counts the others. Call before the first Add.
func (t *Trail) Limit(l Limiter, limited *metrics.Counter) {
	t.anon, t.limited = l, limited
}

// Add queues r without ever blocking; false when the queue was full (or
// the trail closed): r is dropped and counted; or when r is anonymous and
// past Limit's bound: r is left out and counted.
func (t *Trail) Add(r Record) bool {
	if r.Anonymous && t.anon != nil {
		ok, dropped := t.anon.Allow()
		if !ok {
			t.limited.Inc()
			return false
		}
		r.Dropped = dropped
	}
	if !t.closed.Load() {
		select {
		case t.q <- r:
			return true
		default:
		}
	}
	t.dropped.Inc()
	return false
}

// Close stops the writer once what is queued is written, or when ctx ends
// (a sink that blocks: what is left is dropped with the process).
func (t *Trail) Close(ctx context.Context) {
	t.once.Do(func() {
		t.closed.Store(true)
		close(t.stop)
	})
	select {
	case <-t.done:
	case <-ctx.Done():
	}
}

func (t *Trail) run() {
	defer close(t.done)
	for {
		select {
		case r := <-t.q:
			t.write(&r)
		case <-t.stop:
			for {
				select {
				case r := <-t.q:
					t.write(&r)
				default:
					return
				}
			}
		}
	}
}

func (t *Trail) write(r *Record) {
	topics := r.Topics
	if r.Admin && len(topics) == 0 {
		topics = RequestTopics(r.Key, r.Version, r.Body)
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("host", r.Cluster),
		slog.String("method", Method),
		slog.String("operation", r.API),
		slog.String("decision", r.Decision),
		slog.String("code", r.Cause),
		slog.String("tenant", r.Tenant),
		slog.String("principal", r.Principal),
		slog.String("mechanism", r.Mechanism),
	)
	if len(r.Actors) > 0 {
		attrs = append(attrs, slog.Any("actors", r.Actors))
	}
	if r.Dropped > 0 {
		attrs = append(attrs, slog.Int("lines_dropped", r.Dropped))
	}
	if len(topics) > 0 {
		attrs = append(attrs, slog.String("topic", t.hashTopic(r.HashKey, topics[0])))
		if len(topics) > 1 {
			n := min(len(topics), maxTopics)
			hs := make([]string, n)
			for i := range n {
				hs[i] = t.hashTopic(r.HashKey, topics[i])
			}
			attrs = append(attrs, slog.Any("topics", hs), slog.Int("topic_count", len(topics)))
		}
	}
	rec := slog.NewRecord(r.Time, slog.LevelInfo, Message, 0)
	rec.AddAttrs(attrs...)
	// Handle, not Log: the audit is written whatever the logs' level.
	if t.h.Handle(context.Background(), rec) == nil {
		t.written.Inc()
	}
}

// hashTopic is the topic's keyed hash as written.
func (t *Trail) hashTopic(key, topic string) string {
	if t.mac == nil || key != t.macKey {
		t.mac, t.macKey = hmac.New(sha256.New, []byte(key)), key
	}
	t.mac.Reset()
	t.mac.Write([]byte(topic))
	t.sum = t.mac.Sum(t.sum[:0])
	return HashPrefix + hex.EncodeToString(t.sum[:HashBytes])
}

// HashBytes is the length of a topic's hash, in bytes before hex: 128 bits
// of HMAC-SHA256 tell topics apart and cannot be reversed without the key.
const HashBytes = 16

// HashPrefix names the hash in the line (a reader knows it is not a name).
const HashPrefix = "hmac-sha256:"

// HashTopic is the hash a line holds for topic under key: what an operator
// who holds the key computes to find a topic's lines.
func HashTopic(key, topic string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(topic))
	return HashPrefix + hex.EncodeToString(m.Sum(nil)[:HashBytes])
}
