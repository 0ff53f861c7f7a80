package decide

// AddOffsetsToTxn (key 25), versions 0-4: a send operation with
// transactions: true (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise), and
// a receive operation for the group whose offsets the transaction commits
// (GROUP_AUTHORIZATION_FAILED otherwise), checked in Kafka's order. The
// transactional id is written <prefix><tenant>.~t.<id>, the group
// <prefix><tenant>.~g.<id> (N1, D7).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(25, Served, 0, 4, addOffsetsToTxnRequest, addOffsetsToTxnResponse) }

func addOffsetsToTxnRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed AddOffsetsToTxn"
		return Disconnect, nil
	}
	req := r.(*kmsg.AddOffsetsToTxnRequest)
	code := s.txnRefusal(req.TransactionalID)
	var group string
	if code == 0 {
		group, code = s.txnGroup(req.Group)
	}
	if code != 0 {
		resp := kmsg.NewPtrAddOffsetsToTxnResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		s.answerKmsg(p, resp)
		p.Cause = kerr.ErrorForCode(code).Error()
		return Answer, nil
	}
	req.TransactionalID = s.View.TxnName(req.TransactionalID)
	req.Group = group
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	return Forward, nil
}

// The answer holds an error code alone: scrub drops the rest (D9).
func addOffsetsToTxnResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	s.answerKmsg(p, r)
	return nil
}
