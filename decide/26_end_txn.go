package decide

// EndTxn (key 26), versions 0-5: a send operation with transactions: true
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); the transactional id is
// written <prefix><tenant>.~t.<id> (N1, D7). v5 (KIP-890) answers the
// producer id and epoch to continue with: they pass as they are.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(26, Served, 0, 5, endTxnRequest, endTxnResponse) }

func endTxnRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed EndTxn"
		return Disconnect, nil
	}
	req := r.(*kmsg.EndTxnRequest)
	if code := s.txnRefusal(req.TransactionalID); code != 0 {
		resp := kmsg.NewPtrEndTxnResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		s.answerKmsg(p, resp)
		p.Cause = kerr.ErrorForCode(code).Error()
		return Answer, nil
	}
	req.TransactionalID = s.View.TxnName(req.TransactionalID)
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	return Forward, nil
}

func endTxnResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	s.answerKmsg(p, r)
	return nil
}
