package decide

// InitProducerId (key 22), versions 0-5: an idempotent producer needs a
// send operation (CLUSTER_AUTHORIZATION_FAILED otherwise); a transactional
// one a send operation with transactions: true
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); the transactional id is
// written <prefix><tenant>.~t.<id> (D7, N1).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(22, 0, 5, initProducerIDRequest, pass[*kmsg.InitProducerIDResponse]) }

func initProducerIDRequest(s *Session, h *codec.RequestHeader, req *kmsg.InitProducerIDRequest, p *Pending) Outcome {
	var code int16
	switch {
	case req.TransactionalID == nil && !s.View.CanSend:
		code = kerr.ClusterAuthorizationFailed.Code
	case req.TransactionalID != nil && !s.View.Transactions:
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.InitProducerIDResponse) {
			r.ErrorCode, r.ProducerID, r.ProducerEpoch = code, -1, -1
		})
	}
	if req.TransactionalID != nil {
		req.TransactionalID = kmsg.StringPtr(s.View.TxnName(*req.TransactionalID))
	}
	p.Reserve = AnswerReserve
	return s.forward(h, p, req)
}
