package decide

import (
	"slices"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// View is what one identity sees of one virtual cluster: the topics that
// its operations open, under their short names, and the physical names
// they stand for. Built at authentication (and again when the snapshot
// changes); read-only afterwards.
type View struct {
	Cluster *configs.Cluster
	Tenant  string
	// Ops are the identity's operations served on this cluster.
	Ops []*configs.Operation

	topics map[string]*topicAccess // by short name
	phys   map[string]*topicAccess // by physical name
	names  []string                // short names, sorted as the contract lists them

	tenantDot []byte // "acme." — client ids
	txnPrefix []byte // "<prefix>acme.~t."
	grpPrefix []byte // "<prefix>acme.~g."

	CanSend, CanReceive, Transactions bool
	// CanAdminGroups: the token carries the admin_scope of one of the
	// view's receive operations (DeleteGroups, OffsetDelete; see admin.go).
	CanAdminGroups bool
}

type topicAccess struct {
	short, physical []byte
	send, receive   bool
	transactions    bool
	admin           bool // an operation on the topic has an admin_scope the token carries (D8)
}

// NewView builds the view of tenant with the given operation ids on cluster,
// for an identity proven by mech. Operations of other clusters, unknown, or
// with no security alternative for mech are ignored. It returns nil if no
// operation of the cluster admits the identity.
func NewView(snap *configs.Snapshot, cluster *configs.Cluster, tenant string, mech configs.Mechanism, opIDs []string) *View {
	v := &View{
		Cluster:   cluster,
		Tenant:    tenant,
		topics:    map[string]*topicAccess{},
		phys:      map[string]*topicAccess{},
		tenantDot: []byte(tenant + "."),
		txnPrefix: []byte(cluster.Prefix + tenant + ".~t."),
		grpPrefix: []byte(cluster.Prefix + tenant + ".~g."),
	}
	for _, id := range opIDs {
		op := snap.Operations[id]
		if op == nil || op.Cluster != cluster.Name || !op.Admits(mech) {
			continue
		}
		v.Ops = append(v.Ops, op)
		ta := v.topics[op.Channel]
		if ta == nil {
			phys := cluster.Prefix + tenant + "." + op.Channel
			ta = &topicAccess{short: []byte(op.Channel), physical: []byte(phys)}
			v.topics[op.Channel] = ta
			v.phys[phys] = ta
			v.names = append(v.names, op.Channel)
		}
		switch op.Action {
		case "send":
			ta.send = true
			v.CanSend = true
			if op.Transactions {
				ta.transactions = true
				v.Transactions = true
			}
		case "receive":
			ta.receive = true
			v.CanReceive = true
		}
	}
	if len(v.Ops) == 0 {
		return nil
	}
	return v
}

// SetAdminScopes records the scopes of the session's token (D8): a topic is
// administrable when an operation of the view on it has an admin_scope
// the token carries, and the tenant's groups when one of the view's
// receive operations does. API keys and certificates carry no scopes:
// they never administer. Calling it again replaces what it set.
func (v *View) SetAdminScopes(scopes []string) {
	v.CanAdminGroups = false
	for _, ta := range v.topics {
		ta.admin = false
	}
	if len(scopes) == 0 {
		return
	}
	for _, op := range v.Ops {
		if op.AdminScope == "" || !slices.Contains(scopes, op.AdminScope) {
			continue
		}
		if ta := v.topics[op.Channel]; ta != nil {
			ta.admin = true
		}
		if op.Action == "receive" {
			v.CanAdminGroups = true
		}
	}
}

// AdminTopic judges the administration of a short topic name (D8): its
// physical name, or the code of the refusal. A topic outside the view is
// answered outside (what Kafka answers a client that may not describe
// it), one inside without the admin_scope TOPIC_AUTHORIZATION_FAILED.
func (v *View) AdminTopic(name string, outside int16) (string, int16) {
	ta := v.topics[name]
	switch {
	case ta == nil:
		return "", outside
	case !ta.admin:
		return "", kerr.TopicAuthorizationFailed.Code
	}
	return string(ta.physical), 0
}

// Topics returns the short names of the view's topics.
func (v *View) Topics() []string { return v.names }

// Physical returns the broker's name of a short topic name, if the view opens it.
func (v *View) Physical(short string) (string, bool) {
	ta := v.topics[short]
	if ta == nil {
		return "", false
	}
	return string(ta.physical), true
}

// Short returns the client's name of a physical topic name, if it is the view's.
func (v *View) Short(physical string) (string, bool) {
	ta := v.phys[physical]
	if ta == nil {
		return "", false
	}
	return string(ta.short), true
}

// ProduceTopic implements codec.ProduceJudge (D4).
func (v *View) ProduceTopic(name []byte) ([]byte, int16) {
	ta := v.topics[string(name)]
	switch {
	case ta == nil:
		return nil, kerr.UnknownTopicOrPartition.Code
	case !ta.send:
		return nil, kerr.TopicAuthorizationFailed.Code
	}
	return ta.physical, 0
}

// FetchTopic implements codec.FetchJudge (D5).
func (v *View) FetchTopic(name []byte) ([]byte, int16) {
	ta := v.topics[string(name)]
	switch {
	case ta == nil:
		return nil, kerr.UnknownTopicOrPartition.Code
	case !ta.receive:
		return nil, kerr.TopicAuthorizationFailed.Code
	}
	return ta.physical, 0
}

// ClientTopic implements codec.FetchJudge: a physical name back to the session's.
func (v *View) ClientTopic(physical []byte) ([]byte, bool) {
	ta := v.phys[string(physical)]
	if ta == nil {
		return nil, false
	}
	return ta.short, true
}

// TxnID implements codec.ProduceJudge: tx → <prefix><tenant>.~t.tx.
// The returned slice is the view's scratch: valid until the next call.
func (v *View) TxnID(id []byte) []byte {
	return append(v.txnPrefix[:len(v.txnPrefix):len(v.txnPrefix)], id...)
}

// TxnName is TxnID for strings.
func (v *View) TxnName(id string) string { return string(v.txnPrefix) + id }

// GroupName maps a group id into the tenant's group namespace.
func (v *View) GroupName(id string) string { return string(v.grpPrefix) + id }

// AppendClientID appends the broker's client id: <tenant>.<client.id> (N1).
func (v *View) AppendClientID(dst, clientID []byte) []byte {
	dst = append(dst, v.tenantDot...)
	return append(dst, clientID...)
}
