package decide

// The group family (keys 8-16): what the group APIs share.
//
//   - A receive operation opens groups (D6); without one the gateway answers
//     GROUP_AUTHORIZATION_FAILED itself and asks the broker nothing.
//   - A group id is written <prefix><tenant>.~g.<id> towards the broker and
//     mapped back by stripping that prefix (N1, N2); a broker name without the
//     prefix never reaches the client.
//   - The consumer protocol ("consumer" protocol type) carries topic names
//     inside opaque bytes: the member metadata of JoinGroup (a subscription:
//     Topics, and OwnedPartitions from v1) and the member assignment of
//     SyncGroup (Topics). They are decoded with kmsg, mapped to the physical
//     names going in (a topic outside the view is left out) and back to the
//     short names coming out (a topic outside the view is left out: never a
//     name of another tenant). The assignor's UserData (e.g. the sticky
//     assignors' own record of what a member owns) is the tenant's members'
//     business, written and read only by them: it crosses as it is.
//     A version past 3 (unknown to kmsg) is written as 3: its newer fields are
//     dropped, and a reader of v3 reads it whole.
//   - Other protocol types (connect, schema registry's leader election, …)
//     are not the gateway's to read: their bytes cross as they are.
//   - SyncGroup before v5 does not say its protocol type: there a member
//     assignment is read as the consumer's when it is exactly one (kmsg
//     decodes it and writes back the very same bytes); see syncGroupRequest.
//   - Member ids are the broker's (<client id>-<uuid>, the client id being
//     already <tenant>.<client.id>): opaque, they cross both ways unchanged.

import (
	"bytes"
	"github.com/flexway/flexway/codec"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerProtocol is the protocol type of Kafka's consumer groups.
const consumerProtocol = "consumer"

// maxConsumerProtocolVersion is the highest version kmsg reads of the
// consumer protocol's subscription and assignment.
const maxConsumerProtocolVersion = 3

// maxRefused is the most keys, groups or partitions the gateway answers
// itself in one request: past it the request disconnects. A refusal's
// answer is several times larger than what it answers (a coordinator key
// of one byte is answered in fourteen): it is never built for a request
// no client sends.
const maxRefused = 4096

// groupReserve is the bytes reserved for a group answer carrying members'
// metadata (JoinGroup, DescribeGroups).
const groupReserve = 64 << 10

// maxGroupReserve bounds what one group request reserves of the budgets
// (its connection's, its tenant's): an estimate, never a multiple of the
// request's size.
const maxGroupReserve = 256 << 10

// boundReserve caps a group answer's reserve.
func boundReserve(n int64) int64 { return min(n, maxGroupReserve) }

// groupName maps a client's group id to the broker's; false when the
// result would not fit a Kafka string.
func (s *Session) groupName(id string) (string, bool) {
	n := s.View.GroupName(id)
	return n, len(n) <= codec.MaxString
}

// group maps a client's group id for a group API: a receive operation
// opens the tenant's groups (GROUP_AUTHORIZATION_FAILED otherwise, D6),
// and the broker's name must fit a Kafka string (INVALID_GROUP_ID). It
// returns the broker's name, or the code refusing it.
func (s *Session) group(id string) (string, int16) {
	name, ok := s.groupName(id)
	if code := s.refuseGroups(); code != 0 {
		return "", code
	}
	if !ok {
		return "", kerr.InvalidGroupID.Code
	}
	return name, 0
}

// adminGroup maps a client's group id for an administration API
// (DeleteGroups, OffsetDelete): the admin_scope of one of the view's
// receive operations (GROUP_AUTHORIZATION_FAILED otherwise, D8).
func (s *Session) adminGroup(id string) (string, int16) {
	name, ok := s.groupName(id)
	switch {
	case !s.View.CanAdminGroups:
		return "", kerr.GroupAuthorizationFailed.Code
	case !ok:
		return "", kerr.InvalidGroupID.Code
	}
	return name, 0
}

// groupShort maps a broker's group id back to the client's; false when it
// is not in the tenant's group namespace.
func (s *Session) groupShort(name string) (string, bool) {
	pre := s.View.grpPrefix
	if len(name) < len(pre) || name[:len(pre)] != string(pre) {
		return "", false
	}
	return name[len(pre):], true
}

// txnShort maps a broker's transactional id back to the client's.
func (s *Session) txnShort(name string) (string, bool) {
	pre := s.View.txnPrefix
	if len(name) < len(pre) || name[:len(pre)] != string(pre) {
		return "", false
	}
	return name[len(pre):], true
}

// clientIDShort maps the client id the broker reports (<tenant>.<client.id>)
// back to the client's; anything else is blanked.
func (s *Session) clientIDShort(id string) string {
	pre := s.View.tenantDot
	if len(id) < len(pre) || id[:len(pre)] != string(pre) {
		return ""
	}
	return id[len(pre):]
}

// refuseGroups is the code the gateway answers for the group APIs when the
// view does not open groups (D6), 0 when it does.
func (s *Session) refuseGroups() int16 {
	if !s.View.CanReceive {
		return kerr.GroupAuthorizationFailed.Code
	}
	return 0
}

// topicMapper maps one topic name, and tells whether it is the view's.
type topicMapper func(string) (string, bool)

// toPhysical and toShort are the two directions of the view's topic names.
func (s *Session) toPhysical(short string) (string, bool) { return s.View.Physical(short) }
func (s *Session) toShort(phys string) (string, bool)     { return s.View.Short(phys) }

// mapSubscription rewrites a consumer protocol subscription (JoinGroup
// member metadata): Topics and OwnedPartitions mapped by m, the topics m
// does not know left out. ok is false when meta is not a subscription.
func mapSubscription(meta []byte, m topicMapper) (out []byte, ok bool) {
	var sub kmsg.ConsumerMemberMetadata
	if len(meta) < 2 || sub.ReadFrom(meta) != nil {
		return nil, false
	}
	topics := sub.Topics[:0]
	for _, t := range sub.Topics {
		if n, ok := m(t); ok {
			topics = append(topics, n)
		}
	}
	sub.Topics = topics
	owned := sub.OwnedPartitions[:0]
	for _, o := range sub.OwnedPartitions {
		if n, ok := m(o.Topic); ok {
			o.Topic = n
			owned = append(owned, o)
		}
	}
	sub.OwnedPartitions = owned
	if sub.Version > maxConsumerProtocolVersion {
		sub.Version = maxConsumerProtocolVersion
	}
	return sub.AppendTo(nil), true
}

// mapAssignment rewrites a consumer protocol assignment (SyncGroup member
// assignment): Topics mapped by m, the topics m does not know left out.
// With exact, meta is read as an assignment only if kmsg writes back the
// very same bytes (used where the protocol type is not known). ok is false
// when meta is not an assignment.
func mapAssignment(meta []byte, m topicMapper, exact bool) (out []byte, ok bool) {
	var as kmsg.ConsumerMemberAssignment
	if len(meta) < 2 || as.ReadFrom(meta) != nil {
		return nil, false
	}
	if exact && (as.Version < 0 || as.Version > maxConsumerProtocolVersion || !bytes.Equal(as.AppendTo(nil), meta)) {
		return nil, false
	}
	topics := as.Topics[:0]
	for _, t := range as.Topics {
		if n, ok := m(t.Topic); ok {
			t.Topic = n
			topics = append(topics, t)
		}
	}
	as.Topics = topics
	if as.Version > maxConsumerProtocolVersion {
		as.Version = maxConsumerProtocolVersion
	}
	return as.AppendTo(nil), true
}

// emptySubscription and emptyAssignment stand for a consumer protocol
// member's bytes that the broker holds but the gateway cannot read: nothing
// unread crosses to the client.
var (
	emptySubscription = (&kmsg.ConsumerMemberMetadata{}).AppendTo(nil)
	emptyAssignment   = (&kmsg.ConsumerMemberAssignment{}).AppendTo(nil)
)

// subscriptionBack maps a member's subscription back for the client.
func (s *Session) subscriptionBack(meta []byte) []byte {
	if out, ok := mapSubscription(meta, s.toShort); ok {
		return out
	}
	return emptySubscription
}

// assignmentBack maps a member's assignment back for the client. An empty
// assignment (a follower's before the leader's, an error) stays empty.
func (s *Session) assignmentBack(meta []byte) []byte {
	if len(meta) == 0 {
		return meta
	}
	if out, ok := mapAssignment(meta, s.toShort, false); ok {
		return out
	}
	return emptyAssignment
}

// isConsumer tells whether a protocol type is the consumer protocol's.
func isConsumer(protocolType string) bool { return protocolType == consumerProtocol }

// causeOf is the cause logged for an answer the gateway gives itself.
func causeOf(code int16) string { return kerr.ErrorForCode(code).Error() }
