package codec

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type renamer struct{}

func (renamer) Advertise(id int32) (string, int32) { return "gw.example", 19093 + id }

// D9, N2: the Produce answer walker maps names back, drops the broker's
// words, foreign topics and unknown tags, renames node endpoints, and
// merges the gateway's refusals — at every version, as kmsg reads it.
func TestProduceResponseRewriteAllVersions(t *testing.T) {
	for v := int16(0); v <= 12; v++ {
		body := secretProduceAnswer(v)
		var d Dropped
		d.add([]byte("deny"), kerr.TopicAuthorizationFailed.Code).Partitions = []int32{0}
		var w Rewriter
		if err := w.ProduceResponse(v, 99, body, &prefixJudge{}, renamer{}, &d, 0); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		out := joined(&w.Vec)
		corr, rb, err := ParseResponseHeader(out, 0, v)
		if err != nil || corr != 99 {
			t.Fatalf("v%d header: %d %v", v, corr, err)
		}
		got := kmsg.NewPtrProduceResponse()
		got.Version = v
		if err := got.ReadFrom(rb); err != nil {
			t.Fatalf("v%d: kmsg cannot read the answer: %v", v, err)
		}
		if len(got.Topics) != 2 || got.Topics[0].Topic != "orders" || got.Topics[1].Topic != "deny" {
			t.Fatalf("v%d topics %+v", v, got.Topics)
		}
		p := got.Topics[0].Partitions[0]
		if p.Partition != 1 || p.ErrorCode != kerr.NotLeaderForPartition.Code || p.BaseOffset != 10 || p.ErrorMessage != nil {
			t.Fatalf("v%d partition %+v", v, p)
		}
		if v >= 2 && p.LogAppendTime != 11 || v >= 5 && p.LogStartOffset != 12 {
			t.Fatalf("v%d times %+v", v, p)
		}
		if v >= 8 && (len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 3 || p.ErrorRecords[0].ErrorMessage != nil) {
			t.Fatalf("v%d record errors %+v", v, p.ErrorRecords)
		}
		if v >= 10 && (p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 5) {
			t.Fatalf("v%d current leader %+v", v, p.CurrentLeader)
		}
		if v >= 1 && got.ThrottleMillis != 7 {
			t.Fatalf("v%d throttle %d", v, got.ThrottleMillis)
		}
		if v >= 10 && (len(got.Brokers) != 1 || got.Brokers[0].Host != "gw.example" || got.Brokers[0].Port != 19095) {
			t.Fatalf("v%d brokers %+v", v, got.Brokers)
		}
		dp := got.Topics[1].Partitions[0]
		if dp.ErrorCode != kerr.TopicAuthorizationFailed.Code || dp.BaseOffset != -1 {
			t.Fatalf("v%d refused partition %+v", v, dp)
		}
		for _, bad := range []string{"globex", "secret", "kafka-2.internal"} {
			if strings.Contains(string(out), bad) {
				t.Fatalf("v%d: %q crossed", v, bad)
			}
		}
	}
}

// secretProduceAnswer is a version v Produce answer for acme.orders and
// globex.orders, each partition with the broker's words, error records,
// unknown tags (nested in the current leader too) and, from v10, a broker
// endpoint: all the walker must drop or rename.
func secretProduceAnswer(v int16) []byte {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = v
	resp.ThrottleMillis = 7
	for _, name := range []string{"acme.orders", "globex.orders"} {
		tp := kmsg.NewProduceResponseTopic()
		tp.Topic = name
		pp := kmsg.NewProduceResponseTopicPartition()
		pp.Partition = 1
		pp.ErrorCode = kerr.NotLeaderForPartition.Code
		pp.BaseOffset, pp.LogAppendTime, pp.LogStartOffset = 10, 11, 12
		msg := "secret words about globex.orders"
		pp.ErrorMessage = &msg
		re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		re.RelativeOffset = 3
		re.ErrorMessage = &msg
		pp.ErrorRecords = append(pp.ErrorRecords, re)
		if v >= 10 {
			pp.CurrentLeader.LeaderID = 2
			pp.CurrentLeader.LeaderEpoch = 5
			pp.CurrentLeader.UnknownTags.Set(33, []byte("nested-secret"))
		}
		pp.UnknownTags.Set(40, []byte("part-secret"))
		tp.Partitions = append(tp.Partitions, pp)
		resp.Topics = append(resp.Topics, tp)
	}
	if v >= 10 {
		b := kmsg.NewProduceResponseBroker()
		b.NodeID, b.Host, b.Port = 2, "kafka-2.internal", 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.UnknownTags.Set(41, []byte("top-secret"))
	return resp.AppendTo(nil)
}

// The Produce answer walker allocates nothing on the usual answer.
func TestProduceResponseAllocs(t *testing.T) {
	body := oneProduceAnswerBody()
	var w Rewriter
	j := mapJudge{}
	n := testing.AllocsPerRun(200, func() {
		w.ProduceResponse(9, 1, body, j, nil, nil, 0)
		w.Vec.Slices()
	})
	if n != 0 {
		t.Fatalf("%v allocations per answer", n)
	}
}
