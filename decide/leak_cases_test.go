// The cases of TestNothingLeaks (leak_test.go): per served key, acme's
// requests and the broker's answers to them.

package decide

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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
