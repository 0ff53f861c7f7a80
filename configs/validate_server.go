package configs

import (
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/flexway/flexway/quota/counters/storeurl"
)

// The observability, server and audit sections.

// checkObservability checks the budget wait histogram's bounds: at most 20,
// positive, increasing.
func (l *loader) checkObservability() {
	l.checkOTLP()
	o := l.f.Observability.Kafka
	p := path{"observability", "kafka", "budget_wait_buckets"}
	if len(o.BudgetWaitBuckets) > 20 {
		l.cfg.errorf(p, "%d bounds: 20 at most", len(o.BudgetWaitBuckets))
	}
	for i, b := range o.BudgetWaitBuckets {
		switch {
		case b <= 0:
			l.cfg.errorf(p.at(i), "%s: must be positive", b)
		case i > 0 && b <= o.BudgetWaitBuckets[i-1]:
			l.cfg.errorf(p.at(i), "%s: the bounds must increase", b)
		}
	}
}

// checkOTLP checks observability.otlp: a collector's http(s) URL, a
// protocol the exporters speak, a ratio, an interval.
func (l *loader) checkOTLP() {
	o := l.f.Observability.OTLP
	if o == nil {
		return
	}
	p := path{"observability", "otlp"}
	if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.cfg.errorf(p.at("endpoint"), "%q: required, the collector's http:// or https:// URL", o.Endpoint)
	}
	if o.Protocol != "http/protobuf" && o.Protocol != "grpc" {
		l.cfg.errorf(p.at("protocol"), "%q: http/protobuf or grpc", o.Protocol)
	}
	if !(o.SamplingRatio >= 0 && o.SamplingRatio <= 1) {
		l.cfg.errorf(p.at("sampling_ratio"), "%v: between 0 and 1", o.SamplingRatio)
	}
	checkRange(l.cfg, p.at("metrics_interval"), o.MetricsInterval, time.Second, time.Hour)
}

// checkServer checks server: the shared counter store's URL (its ${NAME}
// expanded) and sync, the shutdown timeout, the admin address.
func (l *loader) checkServer() {
	d, s := l.cfg, &l.f.Server
	if c := s.Counters; c != nil {
		p := path{"server", "counters"}
		store, missing := expandEnv(c.Store)
		switch {
		case len(missing) > 0:
			d.errorf(p.at("store"), "the environment does not set %s", strings.Join(missing, ", "))
		case store == "":
			d.errorf(p.at("store"), "required: the shared counter store, redis://host:port (or redis-sentinel://, redis-cluster://)")
		default:
			// The store's own parser (one Redis, Sentinel, Cluster): its
			// reason never holds the URL, which may hold a password.
			var ue *storeurl.Error
			if _, err := storeurl.Parse(store); errors.As(err, &ue) {
				d.errorf(p.at("store"), "not a usable redis://, rediss://, unix://, redis-sentinel:// or redis-cluster:// URL: %s", ue.Reason)
			}
		}
		c.Store = store
		if c.Sync <= 0 {
			d.errorf(p.at("sync"), "%s: must be positive", c.Sync)
		}
	}
	checkRange(d, path{"server", "shutdown_timeout"}, s.ShutdownTimeout, time.Second, 10*time.Minute)
	if a := s.Admin; a != nil && a.Address != "" {
		if err := checkHostPort(a.Address, true); err != nil {
			d.errorf(path{"server", "admin", "address"}, "%q: %v", a.Address, err)
		}
	}
}

// expandEnv replaces ${NAME} by the environment's value (the seeds write
// server.counters.store: "${COUNTERS_URL}"), and names the unset variables.
func expandEnv(s string) (string, []string) {
	var missing []string
	out := os.Expand(s, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, "${"+name+"}")
		}
		return v
	})
	return out, missing
}

// MinAuditTopicKey is the shortest audit.topic_key, in bytes.
const MinAuditTopicKey = 16

// checkAudit checks audit (O3): decisions and the key of the topics' hash.
func (l *loader) checkAudit() {
	d, a := l.cfg, l.f.Audit
	if a == nil {
		return
	}
	p := path{"audit"}
	if a.Decisions != "refusals" && a.Decisions != "all" {
		d.errorf(p.at("decisions"), "%q is not a choice: refusals or all", a.Decisions)
	}
	if a.TopicKey == "" {
		// The seed writes audit: { decisions: … } alone: the key is then
		// derived from this replica's configuration (flexway.yaml and the key
		// store as read), the same on replicas that share them; a change of
		// either changes the topics' hashes (topic_key keeps them).
		if l.files != nil {
			a.TopicKey = Secret(hex.EncodeToString(l.files.Sum(nil)))
		}
		return
	}
	l.readSecret(&a.TopicKey, p.at("topic_key"))
	if n := len(a.TopicKey); n > 0 && n < MinAuditTopicKey {
		d.errorf(p.at("topic_key"), "%d bytes: %d at least", n, MinAuditTopicKey)
	}
}
