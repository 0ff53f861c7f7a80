package decide

// FindCoordinator (key 10), versions 0-6 (v0-v3 one key, v4+ a batch of
// keys): a group key (type 0) is written <prefix><tenant>.~g.<key> and needs
// a receive operation (GROUP_AUTHORIZATION_FAILED otherwise); a transaction
// key (type 1) is written <prefix><tenant>.~t.<key> and needs a send
// operation with transactions: true (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// otherwise); a share-group key (type 2, KIP-932, never served) or any other
// type is INVALID_REQUEST. The answer's coordinators are renamed like
// brokers (L1, L2) and its keys mapped back (D6, D7, N1, N2).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(10, 0, 6, findCoordinatorRequest, findCoordinatorResponse) }

const (
	coordinatorGroup int8 = 0
	coordinatorTxn   int8 = 1
)

func findCoordinatorRequest(s *Session, h *codec.RequestHeader, req *kmsg.FindCoordinatorRequest, p *Pending) Outcome {
	if h.Version < 1 {
		req.CoordinatorType = coordinatorGroup
	}
	keys := req.CoordinatorKeys
	if h.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	var code int16
	var name func(string) string
	switch req.CoordinatorType {
	case coordinatorGroup:
		code, name = s.refuseGroups(), s.View.GroupName
	case coordinatorTxn:
		if !s.View.Transactions {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		}
		name = s.View.TxnName
	default:
		code = kerr.InvalidRequest.Code
	}
	if code == 0 {
		for _, k := range keys {
			if len(name(k)) > codec.MaxString {
				code = kerr.InvalidRequest.Code
			}
		}
	}
	if code != 0 {
		if len(keys) > maxRefused {
			p.Cause = "FindCoordinator refused for too many keys"
			return Disconnect
		}
		return refuse(s, p, code, func(r *kmsg.FindCoordinatorResponse) {
			r.ErrorCode, r.NodeID, r.Port = code, -1, -1
			for _, k := range keys {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, code
				r.Coordinators = append(r.Coordinators, c)
			}
		})
	}
	if h.Version < 4 {
		req.CoordinatorKey = name(req.CoordinatorKey)
	} else {
		for i, k := range req.CoordinatorKeys {
			req.CoordinatorKeys[i] = name(k)
		}
	}
	p.Reserve = boundReserve(AnswerReserve + int64(len(keys))*256)
	return s.forward(h, p, req)
}

func findCoordinatorResponse(s *Session, p *Pending, resp *kmsg.FindCoordinatorResponse) {
	if p.Version < 4 {
		resp.NodeID, resp.Host, resp.Port = s.coordinator(resp.ErrorCode, resp.NodeID, resp.Host, resp.Port)
	}
	resp.Coordinators = mapBack(resp.Coordinators, func(c *kmsg.FindCoordinatorResponseCoordinator) *string { return &c.Key }, s.coordinatorKeyShort)
	for i := range resp.Coordinators {
		c := &resp.Coordinators[i]
		c.NodeID, c.Host, c.Port = s.coordinator(c.ErrorCode, c.NodeID, c.Host, c.Port)
	}
}

// coordinatorKeyShort maps a coordinator key back: a group or a
// transactional id of the tenant's.
func (s *Session) coordinatorKeyShort(key string) (string, bool) {
	if short, ok := s.groupShort(key); ok {
		return short, true
	}
	return s.txnShort(key)
}

// coordinator renames a coordinator like a broker; without one (an error)
// it is node -1, no host, port -1.
func (s *Session) coordinator(code int16, node int32, host string, port int32) (int32, string, int32) {
	if code != 0 || node < 0 {
		return -1, "", -1
	}
	s.Brokers.Learn(node, host, port)
	host, port = s.Brokers.Advertise(node)
	return node, host, port
}
