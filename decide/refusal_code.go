package decide

import "github.com/twmb/franz-go/pkg/kerr"

// RefusedCode is the error code of the first part of the request the
// gateway answered itself (a topic, a group, a resource, a transaction
// left out), 0 when it refused nothing: the signals count a request
// "refused" as soon as a part of it is (seed 001, flexway.kafka.requests).
// It reads what the judgement recorded; it allocates nothing.
func (p *Pending) RefusedCode() int16 {
	if c := p.refused.firstCode(); c != 0 {
		return c
	}
	for _, g := range p.refused.inGroups {
		if len(g.topics) > 0 {
			return g.topics[0].code
		}
	}
	for _, t := range p.refused.txns {
		for _, r := range t.topics {
			return r.code
		}
	}
	if len(p.Dropped.Topics) > 0 {
		return p.Dropped.Topics[0].Code
	}
	if len(p.unknownTopics) > 0 {
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}
