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

// leakCases: per served key, the pairs to run at version v.
var leakCases = map[int16]func(v int16) []leakPair{
	0: func(v int16) []leakPair { // Produce
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, -1, 1000
		if v >= 3 {
			req.TransactionID = kmsg.StringPtr("tx-orders")
		}
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "orders"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = bytes.Repeat([]byte{0xab}, 64)
		tp.Partitions = append(tp.Partitions, pp)
		req.Topics = append(req.Topics, tp)

		resp := kmsg.NewPtrProduceResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = name
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.ErrorRecords = append(rp.ErrorRecords, kmsg.NewProduceResponseTopicPartitionErrorRecord())
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
		}
		resp.Brokers = append(resp.Brokers, kmsg.NewProduceResponseBroker())
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	1: func(v int16) []leakPair { // Fetch
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes = v, 100, 1<<20
		for _, name := range []string{"orders", "audit"} {
			tp := kmsg.NewFetchRequestTopic()
			tp.Topic = name
			tp.Partitions = append(tp.Partitions, kmsg.NewFetchRequestTopicPartition())
			req.Topics = append(req.Topics, tp)
		}
		resp := kmsg.NewPtrFetchResponse()
		for _, name := range []string{"acme.orders", "globex.orders", "acme.audit"} {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = name
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.AbortedTransactions = append(rp.AbortedTransactions, kmsg.NewFetchResponseTopicPartitionAbortedTransaction())
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders", "audit"}}}
	},
	2: func(v int16) []leakPair { // ListOffsets
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		tp := kmsg.NewListOffsetsRequestTopic()
		tp.Topic = "orders"
		tp.Partitions = append(tp.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrListOffsetsResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewListOffsetsResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	3: func(v int16) []leakPair { // Metadata
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		for _, name := range []string{"orders", "audit"} {
			tp := kmsg.NewMetadataRequestTopic()
			tp.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, tp)
		}
		resp := kmsg.NewPtrMetadataResponse()
		for n := int32(0); n < 2; n++ {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Port = n, 9092
			resp.Brokers = append(resp.Brokers, b)
		}
		for _, name := range []string{"acme.orders", "globex.orders", "acme.audit"} {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			rt.Partitions = append(rt.Partitions, kmsg.NewMetadataResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		want := []string{"orders", "audit"}
		if v >= 2 {
			want = append(want, "shop")
		}
		return []leakPair{{req, resp, want}}
	},
	8: func(v int16) []leakPair { // OffsetCommit
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation, req.MemberID = v, "g1", 1, "m1"
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "orders"
		tp.Partitions = append(tp.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	9: func(v int16) []leakPair { // OffsetFetch
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		resp := kmsg.NewPtrOffsetFetchResponse()
		topics := func(names ...string) []kmsg.OffsetFetchResponseTopic {
			var out []kmsg.OffsetFetchResponseTopic
			for _, name := range names {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = name
				rt.Partitions = append(rt.Partitions, kmsg.NewOffsetFetchResponseTopicPartition())
				out = append(out, rt)
			}
			return out
		}
		if v < 8 {
			req.Group = "g1"
			tp := kmsg.NewOffsetFetchRequestTopic()
			tp.Topic, tp.Partitions = "orders", []int32{0}
			req.Topics = append(req.Topics, tp)
			resp.Topics = topics("acme.orders", "globex.orders")
			return []leakPair{{req, resp, []string{"orders"}}}
		}
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g1"
		tp := kmsg.NewOffsetFetchRequestGroupTopic()
		tp.Topic, tp.Partitions = "orders", []int32{0}
		g.Topics = append(g.Topics, tp)
		req.Groups = append(req.Groups, g)
		for _, name := range []string{"acme.~g.g1", "globex.~g.g2"} {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = name
			for _, t := range topics("acme.orders", "globex.orders") {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.Topic
				gt.Partitions = append(gt.Partitions, kmsg.NewOffsetFetchResponseGroupTopicPartition())
				rg.Topics = append(rg.Topics, gt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return []leakPair{{req, resp, []string{"orders", "g1"}}}
	},
	10: func(v int16) []leakPair { // FindCoordinator
		var out []leakPair
		for _, c := range []struct {
			typ          int8
			short, phys  string
			other, wantV string
		}{{0, "g1", "acme.~g.g1", "globex.~g.g2", "g1"}, {1, "tx-orders", "acme.~t.tx-orders", "globex.~t.tx-orders", "tx-orders"}} {
			if v == 0 && c.typ != 0 {
				continue // v0 finds groups only
			}
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorType = v, c.typ
			resp := kmsg.NewPtrFindCoordinatorResponse()
			resp.NodeID, resp.Port = 1, 9092
			var want []string
			if v < 4 {
				req.CoordinatorKey = c.short
			} else {
				req.CoordinatorKeys = []string{c.short}
				for _, key := range []string{c.phys, c.other} {
					rc := kmsg.NewFindCoordinatorResponseCoordinator()
					rc.Key, rc.NodeID, rc.Port = key, 1, 9092
					resp.Coordinators = append(resp.Coordinators, rc)
				}
				want = []string{c.wantV}
			}
			out = append(out, leakPair{req, resp, want})
		}
		return out
	},
	11: func(v int16) []leakPair { // JoinGroup
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = v, "g1", 10000, 10000
		req.ProtocolType = "consumer"
		pr := kmsg.NewJoinGroupRequestProtocol()
		pr.Name, pr.Metadata = "range", leakSubscription("orders")
		req.Protocols = append(req.Protocols, pr)
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Generation, resp.Protocol, resp.LeaderID, resp.MemberID = 1, kmsg.StringPtr("range"), "m1", "m1"
		resp.ProtocolType = kmsg.StringPtr("consumer")
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID, m.ProtocolMetadata = "m1", leakSubscription("acme.orders", "globex.orders")
		resp.Members = append(resp.Members, m)
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	12: func(v int16) []leakPair { // Heartbeat
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.Generation, req.MemberID = v, "g1", 1, "m1"
		return []leakPair{{req, kmsg.NewPtrHeartbeatResponse(), nil}}
	},
	13: func(v int16) []leakPair { // LeaveGroup
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group, req.MemberID = v, "g1", "m1"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "m1"
		req.Members = append(req.Members, m)
		resp := kmsg.NewPtrLeaveGroupResponse()
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = "m1"
		resp.Members = append(resp.Members, rm)
		return []leakPair{{req, resp, nil}}
	},
	14: func(v int16) []leakPair { // SyncGroup
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.Generation, req.MemberID = v, "g1", 1, "m1"
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = "m1", leakAssignment("orders")
		req.GroupAssignment = append(req.GroupAssignment, a)
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		resp.MemberAssignment = leakAssignment("acme.orders", "globex.orders")
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	15: func(v int16) []leakPair { // DescribeGroups
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{"g1"}
		resp := kmsg.NewPtrDescribeGroupsResponse()
		for _, name := range []string{"acme.~g.g1", "globex.~g.g2"} {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.State, g.ProtocolType, g.Protocol = name, "Stable", "consumer", "range"
			m := kmsg.NewDescribeGroupsResponseGroupMember()
			m.MemberID, m.ClientID = "m1", "acme.app-1"
			m.ProtocolMetadata = leakSubscription("acme.orders", "globex.orders")
			m.MemberAssignment = leakAssignment("acme.orders", "globex.orders")
			g.Members = append(g.Members, m)
			resp.Groups = append(resp.Groups, g)
		}
		return []leakPair{{req, resp, []string{"g1", "orders"}}}
	},
	16: func(v int16) []leakPair { // ListGroups
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		resp := kmsg.NewPtrListGroupsResponse()
		for _, name := range []string{"acme.~g.g1", "globex.~g.g2"} {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType = name, "consumer"
			resp.Groups = append(resp.Groups, g)
		}
		return []leakPair{{req, resp, []string{"g1"}}}
	},
	22: func(v int16) []leakPair { // InitProducerId
		var out []leakPair
		for _, id := range []*string{kmsg.StringPtr("tx-orders"), nil} {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.TransactionalID, req.TransactionTimeoutMillis = v, id, 60000
			resp := kmsg.NewPtrInitProducerIDResponse()
			resp.ProducerID, resp.ProducerEpoch = 7, 1
			out = append(out, leakPair{req, resp, nil})
		}
		return out
	},
	23: func(v int16) []leakPair { // OffsetForLeaderEpoch
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version = v
		tp := kmsg.NewOffsetForLeaderEpochRequestTopic()
		tp.Topic = "audit"
		tp.Partitions = append(tp.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
		for _, name := range []string{"acme.audit", "globex.orders"} {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetForLeaderEpochResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"audit"}}}
	},
	24: func(v int16) []leakPair { // AddPartitionsToTxn
		req := apRequest(v, "tx-orders", "orders")
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewAddPartitionsToTxnResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		for _, id := range []string{"acme.~t.tx-orders", "globex.~t.tx-orders"} {
			tx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			tx.TransactionalID = id
			for _, name := range []string{"acme.orders", "globex.orders"} {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = name
				tt.Partitions = append(tt.Partitions, kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition())
				tx.Topics = append(tx.Topics, tt)
			}
			resp.Transactions = append(resp.Transactions, tx)
		}
		want := []string{"orders"}
		if v >= 4 {
			want = append(want, "tx-orders")
		}
		return []leakPair{{req, resp, want}}
	},
	25: func(v int16) []leakPair { // AddOffsetsToTxn
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.Group = v, "tx-orders", "g1"
		return []leakPair{{req, kmsg.NewPtrAddOffsetsToTxnResponse(), nil}}
	},
	26: func(v int16) []leakPair { // EndTxn
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID, req.Commit = v, "tx-orders", true
		return []leakPair{{req, kmsg.NewPtrEndTxnResponse(), nil}}
	},
	28: func(v int16) []leakPair { // TxnOffsetCommit
		req := tocRequest(v, "tx-orders", "g1", "orders")
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	19: func(v int16) []leakPair { // CreateTopics
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = v, 1000
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = "orders", 3, 1
		tp.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("604800000")}}
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrCreateTopicsResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = name
			rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("604800000")}}
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	20: func(v int16) []leakPair { // DeleteTopics
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis, req.TopicNames = v, 1000, []string{"orders"}
		resp := kmsg.NewPtrDeleteTopicsResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	21: func(v int16) []leakPair { // DeleteRecords
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = v, 1000
		tp := kmsg.NewDeleteRecordsRequestTopic()
		tp.Topic = "orders"
		tp.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 5}}
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrDeleteRecordsResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewDeleteRecordsResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	32: func(v int16) []leakPair { // DescribeConfigs
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms, req.IncludeDocumentation = v, true, true
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "orders"}, {kmsg.ConfigResourceTypeBroker, "1"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			req.Resources = append(req.Resources, rr)
		}
		resp := kmsg.NewPtrDescribeConfigsResponse()
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "acme.orders"}, {kmsg.ConfigResourceTypeTopic, "globex.orders"}, {kmsg.ConfigResourceTypeBroker, "globex.broker"}} {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("604800000")
			c.Documentation = kmsg.StringPtr(leakWords)
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{{Name: "log.retention.ms", Value: kmsg.StringPtr(leakWords)}}
			rr.Configs = append(rr.Configs, c)
			resp.Resources = append(resp.Resources, rr)
		}
		return []leakPair{{req, resp, []string{"orders", "retention.ms"}}}
	},
	37: func(v int16) []leakPair { // CreatePartitions
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 1000
		tp := kmsg.NewCreatePartitionsRequestTopic()
		tp.Topic, tp.Count = "orders", 4
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrCreatePartitionsResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = name
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	42: func(v int16) []leakPair { // DeleteGroups
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{"g1"}
		resp := kmsg.NewPtrDeleteGroupsResponse()
		for _, name := range []string{"acme.~g.g1", "globex.~g.g2"} {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = name
			resp.Groups = append(resp.Groups, rg)
		}
		return []leakPair{{req, resp, []string{"g1"}}}
	},
	44: func(v int16) []leakPair { // IncrementalAlterConfigs
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "orders"}, {kmsg.ConfigResourceTypeBroker, "1"}} {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("604800000")}}
			req.Resources = append(req.Resources, rr)
		}
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "acme.orders"}, {kmsg.ConfigResourceTypeTopic, "globex.orders"}, {kmsg.ConfigResourceTypeBroker, "globex.broker"}} {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			resp.Resources = append(resp.Resources, rr)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	47: func(v int16) []leakPair { // OffsetDelete
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Version, req.Group = v, "g1"
		tp := kmsg.NewOffsetDeleteRequestTopic()
		tp.Topic = "orders"
		tp.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, tp)
		resp := kmsg.NewPtrOffsetDeleteResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = name
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return []leakPair{{req, resp, []string{"orders"}}}
	},
	60: func(v int16) []leakPair { // DescribeCluster
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		resp := kmsg.NewPtrDescribeClusterResponse()
		for n := int32(0); n < 2; n++ {
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Port = n, 9092
			resp.Brokers = append(resp.Brokers, b)
		}
		return []leakPair{{req, resp, []string{"shop"}}}
	},
}

func leakSubscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version, m.Topics = 1, topics
	for _, t := range topics {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic, o.Partitions = t, []int32{0}
		m.OwnedPartitions = append(m.OwnedPartitions, o)
	}
	return m.AppendTo(nil)
}

func leakAssignment(topics ...string) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, t := range topics {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = t, []int32{0}
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
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
