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

func init() { reg(3, Served, 1, 12, metadataRequest, metadataResponse) }

func metadataRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed Metadata"
		return Disconnect, nil
	}
	req := r.(*kmsg.MetadataRequest)
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
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve + int64(len(ask))*1024
	return Forward, nil
}

func metadataResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.MetadataResponse)
	for i := range resp.Brokers {
		b := &resp.Brokers[i]
		s.Brokers.Learn(b.NodeID, b.Host, b.Port)
		b.Host, b.Port = s.Brokers.Advertise(b.NodeID)
		b.Rack = nil
	}
	resp.ClusterID = kmsg.StringPtr(s.View.Cluster.Name)
	resp.AuthorizedOperations = math.MinInt32
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		short, ok := s.View.Short(*t.Topic)
		if !ok {
			continue
		}
		t.Topic = kmsg.StringPtr(short)
		t.AuthorizedOperations = math.MinInt32
		kept = append(kept, t)
	}
	for _, name := range p.unknownTopics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(name)
		t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		t.AuthorizedOperations = math.MinInt32
		kept = append(kept, t)
	}
	resp.Topics = kept
	s.answerKmsg(p, resp)
	return nil
}
