package decide

// EndTxn (key 26), versions 0-5: a send operation with transactions: true
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); the transactional id is
// written <prefix><tenant>.~t.<id> (N1, D7). v5 (KIP-890) answers the
// producer id and epoch to continue with: they pass as they are.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(26, 0, 5, endTxnRequest, pass[*kmsg.EndTxnResponse]) }

func endTxnRequest(s *Session, h *codec.RequestHeader, req *kmsg.EndTxnRequest, p *Pending) Outcome {
	if code := s.txnRefusal(req.TransactionalID); code != 0 {
		return refuse(s, p, code, func(r *kmsg.EndTxnResponse) { r.ErrorCode = code })
	}
	req.TransactionalID = s.View.TxnName(req.TransactionalID)
	p.Reserve = AnswerReserve
	return s.forward(h, p, req)
}
