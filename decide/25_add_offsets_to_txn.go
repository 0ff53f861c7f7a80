package decide

// AddOffsetsToTxn (key 25), versions 0-4: a send operation with
// transactions: true (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise), and
// a receive operation for the group whose offsets the transaction commits
// (GROUP_AUTHORIZATION_FAILED otherwise), checked in Kafka's order. The
// transactional id is written <prefix><tenant>.~t.<id>, the group
// <prefix><tenant>.~g.<id> (N1, D7).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(25, 0, 4, addOffsetsToTxnRequest, pass[*kmsg.AddOffsetsToTxnResponse]) }

// The answer holds an error code alone: it passes, scrubbed (D9).
func addOffsetsToTxnRequest(s *Session, h *codec.RequestHeader, req *kmsg.AddOffsetsToTxnRequest, p *Pending) Outcome {
	code := s.txnRefusal(req.TransactionalID)
	var group string
	if code == 0 {
		group, code = s.group(req.Group)
	}
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.AddOffsetsToTxnResponse) { r.ErrorCode = code })
	}
	req.TransactionalID = s.View.TxnName(req.TransactionalID)
	req.Group = group
	p.Reserve = AnswerReserve
	return s.forward(h, p, req)
}
