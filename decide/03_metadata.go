package decide

// Metadata (key 3), versions 1-12 (13 answers by topic id only): the
// session's topics only, by short name; a topic unknown or not opened is
// UNKNOWN_TOPIC_OR_PARTITION without asking the broker; "all topics" asks
// for the view's topics, never the broker's list; automatic creation off;
// authorized operations never asked; brokers renamed (L1, L2); cluster id =
// the virtual cluster's name (D3, D9).

import (
	"math"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(3, 1, 12, metadataRequest, metadataResponse) }

func metadataRequest(s *Session, h *codec.RequestHeader, req *kmsg.MetadataRequest, p *Pending) Outcome {
	var ask []kmsg.MetadataRequestTopic
	if req.Topics == nil {
		for _, short := range s.View.Topics() {
			phys, _ := s.View.Physical(short)
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(phys)
			ask = append(ask, t)
		}
	} else {
		ask = []kmsg.MetadataRequestTopic{}
		for _, t := range req.Topics {
			if t.Topic != nil {
				if phys, ok := s.View.Physical(*t.Topic); ok {
					nt := kmsg.NewMetadataRequestTopic()
					nt.Topic = kmsg.StringPtr(phys)
					ask = append(ask, nt)
					continue
				}
				p.unknownTopics = append(p.unknownTopics, *t.Topic)
			}
			// A topic asked by id only is never looked up: the view names topics.
		}
	}
	req.Topics = ask
	req.AllowAutoTopicCreation = false
	req.IncludeClusterAuthorizedOperations = false
	req.IncludeTopicAuthorizedOperations = false
	p.Reserve = AnswerReserve + int64(len(ask))*1024
	return s.forward(h, p, req)
}

func metadataResponse(s *Session, p *Pending, resp *kmsg.MetadataResponse) {
	for i := range resp.Brokers {
		b := &resp.Brokers[i]
		b.Host, b.Port, b.Rack = s.broker(b.NodeID, b.Host, b.Port)
	}
	resp.ClusterID = kmsg.StringPtr(s.View.Cluster.Name)
	resp.AuthorizedOperations = math.MinInt32
	resp.Topics = keep(resp.Topics, func(t *kmsg.MetadataResponseTopic) bool {
		if t.Topic == nil {
			return false
		}
		short, ok := s.View.Short(*t.Topic)
		if !ok {
			return false
		}
		t.Topic = kmsg.StringPtr(short)
		t.AuthorizedOperations = math.MinInt32
		return true
	})
	for _, name := range p.unknownTopics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(name)
		t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		t.AuthorizedOperations = math.MinInt32
		resp.Topics = append(resp.Topics, t)
	}
}

// broker renames a broker of an answer as the client must see it (L1, L2),
// after recording its real address; the rack is never shown.
func (s *Session) broker(node int32, host string, port int32) (string, int32, *string) {
	s.Brokers.Learn(node, host, port)
	host, port = s.Brokers.Advertise(node)
	return host, port, nil
}
