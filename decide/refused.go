package decide

import "github.com/twmb/franz-go/pkg/kmsg"

// What the gateway answers itself of a request it forwards the rest of:
// the refused entries wait in the Pending, each list saying what it holds,
// and are merged into the broker's answer (or make the whole answer when
// nothing is left to forward). Produce and Fetch keep theirs in
// Pending.Dropped, codec's own list.

// refusal is a topic or a group the gateway answers itself, by the
// client's name.
type refusal struct {
	name string
	code int16
	// partitions are the partitions answered code, for the APIs that
	// answer by partition; nil for those that answer by name.
	partitions []int32
}

// refusedResource is a config resource the gateway answers itself
// (DescribeConfigs, IncrementalAlterConfigs).
type refusedResource struct {
	typ  kmsg.ConfigResourceType
	name string // the client's name
	code int16
}

// groupRefusals are the topics refused in one group of a batched
// OffsetFetch (v8+). A batch may name a group twice: each of the answer's
// groups takes the refusals of the first entry of its name not taken yet.
type groupRefusals struct {
	group  string // the client's name
	topics []refusal
	taken  bool
}

// txnRefusal is a transaction of AddPartitionsToTxn refused whole: each of
// its topics is answered its code (none for a transaction without topics).
type txnRefusal struct {
	id     string // the client's transactional id
	topics []refusal
}

// refusals are the refused entries of one request; one list is used per API.
type refusals struct {
	topics    []refusal         // topics
	groups    []refusal         // groups (DeleteGroups)
	resources []refusedResource // config resources
	inGroups  []groupRefusals   // topics by group (OffsetFetch v8+)
	txns      []txnRefusal      // transactions (AddPartitionsToTxn)
}

// topic records a refused topic.
func (r *refusals) topic(name string, code int16, partitions []int32) {
	r.topics = append(r.topics, refusal{name: name, code: code, partitions: partitions})
}

// group records a refused group.
func (r *refusals) group(name string, code int16) {
	r.groups = append(r.groups, refusal{name: name, code: code})
}

// resource records a refused config resource.
func (r *refusals) resource(typ kmsg.ConfigResourceType, name string, code int16) {
	r.resources = append(r.resources, refusedResource{typ: typ, name: name, code: code})
}

// inGroup records a topic refused in the last group opened with openGroup.
func (r *refusals) inGroup(name string, code int16, partitions []int32) {
	g := &r.inGroups[len(r.inGroups)-1]
	g.topics = append(g.topics, refusal{name: name, code: code, partitions: partitions})
}

// openGroup starts the refusals of one group of a batched OffsetFetch.
func (r *refusals) openGroup(group string) {
	r.inGroups = append(r.inGroups, groupRefusals{group: group})
}

// takeGroup returns the refused topics of the first group named group not
// taken yet, and marks it taken.
func (r *refusals) takeGroup(group string) []refusal {
	for i := range r.inGroups {
		g := &r.inGroups[i]
		if !g.taken && g.group == group {
			g.taken = true
			return g.topics
		}
	}
	return nil
}

// size is the size of the refusals, as maxRefused bounds it: each entry
// counts one, each refused partition one more, a config resource one more
// for its type, a group of a batched OffsetFetch one besides its topics.
func (r *refusals) size() int {
	n := 2 * len(r.resources)
	for _, ts := range [][]refusal{r.topics, r.groups} {
		for _, t := range ts {
			n += 1 + len(t.partitions)
		}
	}
	for _, g := range r.inGroups {
		n++
		for _, t := range g.topics {
			n += 1 + len(t.partitions)
		}
	}
	return n
}

// tooMany tells whether the refusals pass maxRefused (an OffsetFetch
// partition of four bytes is answered in twenty).
func (r *refusals) tooMany() bool { return r.size() > maxRefused }

// firstCode is the code of the first refused topic, group or resource, 0
// if none.
func (r *refusals) firstCode() int16 {
	switch {
	case len(r.topics) > 0:
		return r.topics[0].code
	case len(r.groups) > 0:
		return r.groups[0].code
	case len(r.resources) > 0:
		return r.resources[0].code
	}
	return 0
}
