package decide

// The administration family (D8, seed 002 "Bounded administration"):
// CreateTopics (19), DeleteTopics (20), DeleteRecords (21), DescribeConfigs
// (32), CreatePartitions (37), DeleteGroups (42), IncrementalAlterConfigs
// (44), OffsetDelete (47). What they share:
//
//   - Only a token administers: a topic is administrable when an operation
//     of the view on it has an admin_scope the session's token carries
//     (View.SetAdminScopes). API keys and certificates carry no scopes.
//     A topic of the view without it: TOPIC_AUTHORIZATION_FAILED. A topic
//     outside the view is answered as Kafka answers a client that may not
//     see it: UNKNOWN_TOPIC_OR_PARTITION where Kafka first checks DESCRIBE
//     (DeleteTopics, OffsetDelete), TOPIC_AUTHORIZATION_FAILED elsewhere.
//     Never a topic the contract does not declare reaches the broker.
//   - Groups: the seed gives the administration APIs to the admin_scope and
//     the group APIs to the receive operations (D6). Read together: the
//     tenant's groups are administered (DeleteGroups, OffsetDelete) by a
//     token carrying the admin_scope of one of the view's receive
//     operations (View.CanAdminGroups); GROUP_AUTHORIZATION_FAILED
//     otherwise. Groups are mapped into <prefix><tenant>.~g. as the group
//     APIs do (groups.go); OffsetDelete's topics must be administrable too
//     (deleting a topic's committed offsets is administering that topic).
//   - Config resources (DescribeConfigs, IncrementalAlterConfigs): TOPIC
//     only. A BROKER, BROKER_LOGGER, CLIENT_METRICS or unknown resource is
//     answered CLUSTER_AUTHORIZATION_FAILED, a GROUP_CONFIG resource
//     GROUP_AUTHORIZATION_FAILED, by the gateway: never a broker resource.
//   - Bounded administration: no replica assignment (placement is the
//     cluster's), at most max_topic_partitions partitions, only the
//     allow-listed configurations within the fixed bounds of the seed's
//     table (adminConfigs); anything else is POLICY_VIOLATION. A value that
//     passes is forwarded in its canonical form (what the broker reads is
//     what was judged). A DELETE (IncrementalAlterConfigs) of an
//     allow-listed key, back to the broker's default, always passes.
//   - What the gateway refuses it answers itself, merged after the broker's
//     answer (or alone when nothing is left to forward). The Pending's
//     refusals carry the refused entries by the client's names (refused.go):
//     topics with their code (and their partitions for DeleteRecords and
//     OffsetDelete), groups with their code, config resources with their
//     type and code.
//   - Answers: names mapped back, anything not the view's left out,
//     ErrorMessages dropped (scrub); DescribeConfigs never asks for nor
//     shows synonyms or documentation (the broker's own settings).
//   - Versions: never one that names topics by id (DeleteTopics v6 is not
//     served).

import (
	"math"
	"strconv"
	"strings"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminReserve is what one named entry of an administration answer is
// reserved (a DescribeConfigs resource of a few dozen configurations, a
// CreateTopics v5+ topic with its configurations).
const adminReserve = 8 << 10

// adminReserveFor bounds what an administration request reserves.
func adminReserveFor(n int) int64 { return boundReserve(AnswerReserve + int64(n)*adminReserve) }

// maxTopicPartitions is max_topic_partitions in force (the default when unset).
func (s *Session) maxTopicPartitions() int32 {
	if s.Limits.MaxTopicPartitions > 0 {
		return s.Limits.MaxTopicPartitions
	}
	return configs.DefaultMaxTopicPartitions
}

// maxMessageBytes is the upper bound of max.message.bytes: max_request_bytes.
func (s *Session) maxMessageBytes() int64 {
	n := s.Limits.MaxRequestBytes
	if n <= 0 {
		n = int64(configs.DefaultMaxRequestBytes)
	}
	return min(n, math.MaxInt32)
}

// partitionsAllowed: a partition count asked for (a new topic's, or a
// topic's new total) within max_topic_partitions. CreateTopics' -1 (v4+)
// is the broker's num.partitions: the operator's own choice, allowed.
// Counts Kafka refuses itself (0, below -1) are left to the broker.
func (s *Session) partitionsAllowed(n int32) bool { return n <= s.maxTopicPartitions() }

// Config bounds (seed 002 "Bounded administration", the table, exactly).
const (
	hourMs = int64(3600000)
	dayMs  = 24 * hourMs
	mib    = int64(1) << 20
)

type boundKind uint8

const (
	boundInt   boundKind = iota // a whole number in [lo, hi]
	boundRatio                  // a decimal number in [0.1, 1]
	boundEnum                   // one of values
	boundList                   // a non-empty list of distinct values (cleanup.policy)
)

type configBound struct {
	kind   boundKind
	lo, hi int64 // boundInt; hi < 0: max_request_bytes
	values []string
}

// adminConfigs is the allow-list: the only configurations CreateTopics and
// IncrementalAlterConfigs may set, each within its bounds.
var adminConfigs = map[string]configBound{
	"retention.ms":              {kind: boundInt, lo: 60000, hi: 365 * dayMs}, // -1 (unlimited) refused
	"retention.bytes":           {kind: boundInt, lo: mib, hi: mib << 20},     // 1MiB..1TiB; -1 refused
	"segment.ms":                {kind: boundInt, lo: 600000, hi: 30 * dayMs},
	"segment.bytes":             {kind: boundInt, lo: mib, hi: mib << 10}, // 1MiB..1GiB
	"max.compaction.lag.ms":     {kind: boundInt, lo: hourMs, hi: 365 * dayMs},
	"min.compaction.lag.ms":     {kind: boundInt, lo: 0, hi: 30 * dayMs},
	"delete.retention.ms":       {kind: boundInt, lo: 0, hi: 30 * dayMs},
	"min.cleanable.dirty.ratio": {kind: boundRatio},
	"max.message.bytes":         {kind: boundInt, lo: 1 << 10, hi: -1},                    // 1KiB..max_request_bytes
	"cleanup.policy":            {kind: boundList, values: []string{"compact", "delete"}}, // both: "compact,delete"
	"compression.type":          {kind: boundEnum, values: []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}},
	"message.timestamp.type":    {kind: boundEnum, values: []string{"CreateTime", "LogAppendTime"}},
}

// configValue judges a value set for name (CreateTopics, a SET of
// IncrementalAlterConfigs) and returns its canonical form; false: the
// configuration is not allow-listed or the value is outside its bounds
// (POLICY_VIOLATION).
func (s *Session) configValue(name string, value *string) (string, bool) {
	b, ok := adminConfigs[name]
	if !ok || value == nil {
		return "", false
	}
	v := strings.TrimSpace(*value)
	switch b.kind {
	case boundInt:
		n, err := strconv.ParseInt(v, 10, 64)
		hi := b.hi
		if hi < 0 {
			hi = s.maxMessageBytes()
		}
		if err != nil || n < b.lo || n > hi {
			return "", false
		}
		return strconv.FormatInt(n, 10), true
	case boundRatio:
		// Plain decimals only ("0.5", "1", ".25"): no exponent, no NaN, no
		// infinity, nothing Java and Go might read apart.
		if !plainDecimal(v) {
			return "", false
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0.1 && f <= 1) {
			return "", false
		}
		return strconv.FormatFloat(f, 'f', -1, 64), true
	case boundEnum:
		for _, w := range b.values {
			if v == w {
				return w, true
			}
		}
		return "", false
	case boundList:
		return listValue(v, b.values)
	}
	return "", false
}

// listValue judges a comma-separated list whose elements are all among
// values (each at most once once canonical), and returns it in the order
// of values; false for an empty list or element.
func listValue(v string, values []string) (string, bool) {
	seen := make([]bool, len(values))
	for _, el := range strings.Split(v, ",") {
		el = strings.TrimSpace(el)
		i := -1
		for j, w := range values {
			if el == w {
				i = j
			}
		}
		if i < 0 {
			return "", false
		}
		seen[i] = true
	}
	var out []string
	for i, w := range values {
		if seen[i] {
			out = append(out, w)
		}
	}
	return strings.Join(out, ","), true
}

// plainDecimal: digits with at most one dot, at least one digit.
func plainDecimal(v string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1 && len(v) <= 32
}

// alterConfig judges one IncrementalAlterConfigs operation and rewrites it
// to its canonical form; false: POLICY_VIOLATION.
func (s *Session) alterConfig(c *kmsg.IncrementalAlterConfigsRequestResourceConfig) bool {
	b, ok := adminConfigs[c.Name]
	if !ok {
		return false
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpDelete:
		c.Value = nil // back to the broker's default: always allowed
		return true
	case kmsg.IncrementalAlterConfigOpSet:
		v, ok := s.configValue(c.Name, c.Value)
		if ok {
			c.Value = kmsg.StringPtr(v)
		}
		return ok
	case kmsg.IncrementalAlterConfigOpAppend:
		// Appending to cleanup.policy stays within delete|compact|both.
		if b.kind != boundList || c.Value == nil {
			return false
		}
		v, ok := listValue(*c.Value, b.values)
		if ok {
			c.Value = kmsg.StringPtr(v)
		}
		return ok
	}
	// SUBTRACT could leave cleanup.policy empty, outside its bounds; the
	// list is SET instead. Unknown operations are refused.
	return false
}

// configResource judges a config resource: the physical name of an
// administrable topic, or the code of the refusal.
func (s *Session) configResource(typ kmsg.ConfigResourceType, name string) (string, int16) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return s.View.AdminTopic(name, kerr.TopicAuthorizationFailed.Code)
	case kmsg.ConfigResourceTypeGroupConfig:
		return "", kerr.GroupAuthorizationFailed.Code
	}
	return "", kerr.ClusterAuthorizationFailed.Code // never a broker resource
}

// judgeResource judges a config resource of a request: renamed to the
// physical topic, or recorded refused in p. policy (nil: none) judges the
// configurations of a resource the session may administer.
func (s *Session) judgeResource(p *Pending, typ kmsg.ConfigResourceType, name *string, policy func() int16) bool {
	phys, code := s.configResource(typ, *name)
	if code == 0 && policy != nil {
		code = policy()
	}
	if code != 0 {
		p.refused.resource(typ, *name, code)
		return false
	}
	*name = phys
	return true
}

// forwardAdmin ends the judgement of an administration request whose
// refused entries are in p: past maxRefused of them the request
// disconnects (an answer is never built for a request no client sends; see
// groups.go); alone (nothing left to forward), the gateway answers alone;
// otherwise req goes to the broker, reserve bytes reserved for its answer.
func forwardAdmin[T any, PT response[T]](s *Session, h *codec.RequestHeader, p *Pending, req kmsg.Request, alone bool,
	reserve int64, rewrite func(*Session, *Pending, PT)) Outcome {
	switch {
	case p.refused.tooMany():
		p.Cause = Name(h.Key) + " refused for too many entries"
		return Disconnect
	case alone:
		p.Cause = adminCause(p)
		return answerAlone(s, p, rewrite)
	}
	p.Reserve = reserve
	return s.forward(h, p, req)
}

// adminCause is the logged cause of a request whose entries were all refused.
func adminCause(p *Pending) string {
	code := p.refused.firstCode()
	if code == 0 {
		return "nothing to forward"
	}
	return causeOf(code)
}

// configTopicShort maps a config resource of the broker's answer back: a
// topic of the view, renamed to its short name; false for anything else
// (left out).
func (s *Session) configTopicShort(typ kmsg.ConfigResourceType, name *string) bool {
	if typ != kmsg.ConfigResourceTypeTopic {
		return false
	}
	short, ok := s.View.Short(*name)
	if ok {
		*name = short
	}
	return ok
}
