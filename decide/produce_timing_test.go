package decide

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceAnswerKmsgScrub is what a Produce answer cost before the
// codec walker (kept as the reference for BENCHMARKS.md): decode with
// kmsg, the reflective scrub, encode.
func BenchmarkProduceAnswerKmsgScrub(b *testing.B) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	tp := kmsg.NewProduceResponseTopic()
	tp.Topic = "acme.orders"
	tp.Partitions = append(tp.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, tp)
	body := resp.AppendTo(nil)
	var out []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r := kmsg.NewPtrProduceResponse()
		r.Version = 9
		if err := r.ReadFrom(body); err != nil {
			b.Fatal(err)
		}
		r.Topics[0].Topic = "orders"
		scrub(r, true)
		out = r.AppendTo(out[:0])
	}
}
