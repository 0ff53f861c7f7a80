// The served family's seeds for FuzzSessionRequest: Produce, Fetch,
// ListOffsets, Metadata, InitProducerID and OffsetForLeaderEpoch requests
// naming the seed topics, then the groups', transactions' and
// administration's seeds.

package decide

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var seedTopics = []string{"orders", "audit", "unknown", "globex.orders", "payments", "elsewhere"}

// servedSeeds: every family's seeds, the served APIs' first.
func servedSeeds() [][]byte {
	var out [][]byte
	add := func(r kmsg.Request) { out = append(out, reqFrame(r, 7, "app-1")) }
	produceSeeds(add)
	fetchSeeds(add)
	metadataSeeds(add)
	out = append(out, groupFuzzSeeds()...)
	out = append(out, txnFuzzSeeds()...)
	out = append(out, adminFuzzSeeds()...)
	return out
}

// produceSeeds: Produce requests at versions 0 to 12, acks -1 and 0, with
// and without a transactional id, to every seed topic, orders alone and
// audit alone.
func produceSeeds(add func(kmsg.Request)) {
	records := bytes.Repeat([]byte{0xab}, 700)
	tx := "tx-1"

	for _, v := range []int16{0, 3, 7, 9, 12} {
		for _, acks := range []int16{-1, 0} {
			for _, txn := range []*string{nil, &tx} {
				for _, topics := range [][]string{seedTopics, {"orders"}, {"audit"}} {
					r := kmsg.NewPtrProduceRequest()
					r.Version, r.Acks, r.TimeoutMillis = v, acks, 1000
					if v >= 3 {
						r.TransactionID = txn
					}
					for _, name := range topics {
						tp := kmsg.NewProduceRequestTopic()
						tp.Topic = name
						pp := kmsg.NewProduceRequestTopicPartition()
						pp.Records = records
						tp.Partitions = append(tp.Partitions, pp)
						r.Topics = append(r.Topics, tp)
					}
					add(r)
				}
			}
		}
	}
}

// fetchSeeds: Fetch and ListOffsets requests with a replica id, and Fetch
// bounds past the gateway's, for the seed topics and the other tenant's.
func fetchSeeds(add func(kmsg.Request)) {
	for _, v := range []int16{4, 7, 11, 12} {
		for _, topics := range [][]string{seedTopics, {"orders", "audit"}, {"globex.orders"}} {
			r := kmsg.NewPtrFetchRequest()
			r.Version, r.ReplicaID, r.MaxWaitMillis, r.MaxBytes = v, 5, 99999, 1<<30
			for _, name := range topics {
				tp := kmsg.NewFetchRequestTopic()
				tp.Topic = name
				tp.Partitions = append(tp.Partitions, kmsg.NewFetchRequestTopicPartition())
				r.Topics = append(r.Topics, tp)
			}
			add(r)
		}
	}
	for _, v := range []int16{1, 4, 6, 10} {
		for _, topics := range [][]string{seedTopics, {"orders"}, {"globex.orders"}} {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Version, r.ReplicaID = v, 3
			for _, name := range topics {
				tp := kmsg.NewListOffsetsRequestTopic()
				tp.Topic = name
				tp.Partitions = append(tp.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
				r.Topics = append(r.Topics, tp)
			}
			add(r)
		}
	}
}

// metadataSeeds: Metadata for all topics, none, the seed topics and the
// other tenant's (and, from v10, one by id); InitProducerID with and
// without a transactional id; OffsetForLeaderEpoch with a replica id.
func metadataSeeds(add func(kmsg.Request)) {
	tx := "tx-1"
	for _, v := range []int16{1, 4, 9, 10, 12} {
		for _, topics := range [][]string{nil, {}, seedTopics, {"globex.orders"}} {
			r := kmsg.NewPtrMetadataRequest()
			r.Version, r.AllowAutoTopicCreation = v, true
			if topics != nil {
				r.Topics = []kmsg.MetadataRequestTopic{}
			}
			for _, name := range topics {
				tp := kmsg.NewMetadataRequestTopic()
				tp.Topic = kmsg.StringPtr(name)
				r.Topics = append(r.Topics, tp)
			}
			if v >= 10 && topics != nil {
				tp := kmsg.NewMetadataRequestTopic() // by id only
				tp.TopicID = [16]byte{1, 2, 3}
				r.Topics = append(r.Topics, tp)
			}
			add(r)
		}
	}
	for _, v := range []int16{0, 2, 4, 5} {
		for _, txn := range []*string{nil, &tx} {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.Version, r.TransactionalID, r.TransactionTimeoutMillis = v, txn, 60000
			add(r)
		}
	}
	for _, v := range []int16{2, 3, 4} {
		for _, topics := range [][]string{seedTopics, {"audit"}} {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.Version, r.ReplicaID = v, 2
			for _, name := range topics {
				tp := kmsg.NewOffsetForLeaderEpochRequestTopic()
				tp.Topic = name
				tp.Partitions = append(tp.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
				r.Topics = append(r.Topics, tp)
			}
			add(r)
		}
	}
}
