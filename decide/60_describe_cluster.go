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

func init() { serve(60, 0, 2, describeClusterRequest, describeClusterResponse) }

// endpointBrokers is DescribeCluster's EndpointType of brokers (KIP-919).
const endpointBrokers = 1

func describeClusterRequest(s *Session, h *codec.RequestHeader, req *kmsg.DescribeClusterRequest, p *Pending) Outcome {
	if h.Version >= 1 && req.EndpointType != endpointBrokers {
		code := kerr.UnsupportedEndpointType.Code
		if req.EndpointType == 2 {
			code = kerr.MismatchedEndpointType.Code
		}
		return refuse(s, p, code, func(r *kmsg.DescribeClusterResponse) {
			r.ErrorCode, r.ClusterAuthorizedOperations = code, math.MinInt32
		})
	}
	req.IncludeClusterAuthorizedOperations = false
	p.Reserve = AnswerReserve
	return s.forward(h, p, req)
}

func describeClusterResponse(s *Session, p *Pending, resp *kmsg.DescribeClusterResponse) {
	for i := range resp.Brokers {
		b := &resp.Brokers[i]
		b.Host, b.Port, b.Rack = s.broker(b.NodeID, b.Host, b.Port)
	}
	resp.ClusterID = s.View.Cluster.Name
	resp.ClusterAuthorizedOperations = math.MinInt32
}
