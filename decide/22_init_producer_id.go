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

func init() { reg(22, Served, 0, 5, initProducerIDRequest, initProducerIDResponse) }

func initProducerIDRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed InitProducerId"
		return Disconnect, nil
	}
	req := r.(*kmsg.InitProducerIDRequest)
	var code int16
	switch {
	case req.TransactionalID == nil && !s.View.CanSend:
		code = kerr.ClusterAuthorizationFailed.Code
	case req.TransactionalID != nil && !s.View.Transactions:
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	if code != 0 {
		resp := kmsg.NewPtrInitProducerIDResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		s.answerKmsg(p, resp)
		p.Cause = kerr.ErrorForCode(code).Error()
		return Answer, nil
	}
	if req.TransactionalID != nil {
		req.TransactionalID = kmsg.StringPtr(s.View.TxnName(*req.TransactionalID))
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	return Forward, nil
}

func initProducerIDResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	s.answerKmsg(p, r)
	return nil
}
