package decide

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Refused returns the first entry the gateway refused in the request p
// describes, after Request: its Kafka error code and, when the entry is a
// topic (or a topic's config resource), the topic by the client's name (""
// for a group or a transaction). Code 0: nothing refused (the request went
// whole to the broker, or was answered whole as asked). A request refused
// in part is a refusal (seed 001: "refused" as soon as a part is): the
// audit trail (O3) and the decision's cause read it here.
//
// It allocates only for a refused topic of Produce or Fetch (its name is
// held as bytes); nothing when nothing was refused.
func (p *Pending) Refused() (code int16, topic string) {
	if len(p.Dropped.Topics) > 0 {
		t := &p.Dropped.Topics[0]
		return t.Code, string(t.Name)
	}
	if len(p.unknownTopics) > 0 {
		return kerr.UnknownTopicOrPartition.Code, p.unknownTopics[0]
	}
	r := &p.refused
	switch {
	case len(r.topics) > 0:
		return r.topics[0].code, r.topics[0].name
	case len(r.resources) > 0:
		res := &r.resources[0]
		if res.typ == kmsg.ConfigResourceTypeTopic {
			return res.code, res.name
		}
		return res.code, ""
	case len(r.groups) > 0:
		return r.groups[0].code, ""
	}
	for _, g := range r.inGroups {
		if len(g.topics) > 0 {
			return g.topics[0].code, g.topics[0].name
		}
	}
	for _, t := range r.txns {
		if len(t.topics) > 0 {
			return t.topics[0].code, t.topics[0].name
		}
		return kerr.TransactionalIDAuthorizationFailed.Code, ""
	}
	return 0, ""
}
