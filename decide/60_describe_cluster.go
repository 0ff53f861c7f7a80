package decide

// DescribeCluster (key 60), versions 0-2: the virtual cluster (D3, D9): its
// name as the cluster id, the brokers renamed as in Metadata (L1, L2), the
// controller id as the broker gives it (a live broker's node id), the
// authorized operations never asked (answered -2147483648). The gateway is a
// broker endpoint: a request for the controllers' endpoints
// (EndpointType 2) is MISMATCHED_ENDPOINT_TYPE, an unknown endpoint type
// UNSUPPORTED_ENDPOINT_TYPE, as Kafka answers them, without asking the
// broker (a controller's address never crosses).

import (
	"math"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(60, Served, 0, 2, describeClusterRequest, describeClusterResponse) }

// endpointBrokers is DescribeCluster's EndpointType of brokers (KIP-919).
const endpointBrokers = 1

func describeClusterRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed DescribeCluster"
		return Disconnect, nil
	}
	req := r.(*kmsg.DescribeClusterRequest)
	if h.Version >= 1 && req.EndpointType != endpointBrokers {
		resp := kmsg.NewPtrDescribeClusterResponse()
		resp.Version = h.Version
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		if req.EndpointType == 2 {
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
		}
		resp.ClusterAuthorizedOperations = math.MinInt32
		s.answerKmsg(p, resp)
		p.Cause = kerr.ErrorForCode(resp.ErrorCode).Error()
		return Answer, nil
	}
	req.IncludeClusterAuthorizedOperations = false
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	return Forward, nil
}

func describeClusterResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.DescribeClusterResponse)
	for i := range resp.Brokers {
		b := &resp.Brokers[i]
		s.Brokers.Learn(b.NodeID, b.Host, b.Port)
		b.Host, b.Port = s.Brokers.Advertise(b.NodeID)
		b.Rack = nil
	}
	resp.ClusterID = s.View.Cluster.Name
	resp.ClusterAuthorizedOperations = math.MinInt32
	s.answerKmsg(p, resp)
	return nil
}
