package decide

// The transaction family: AddPartitionsToTxn (24), AddOffsetsToTxn (25),
// EndTxn (26), TxnOffsetCommit (28); InitProducerId (22) has its own file.
//
// A transactional request needs a send operation declaring
// `transactions: true` (TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise, D7).
// The transactional id is written <prefix><tenant>.~t.<id> and the group of
// a transactional offset commit <prefix><tenant>.~g.<id> (N1); answers name
// them back by the client's names, and a name outside the session's
// namespaces never crosses (N2).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
)

// (codec.MaxString, group and txnShort are the group family's, in groups.go:
// one namespace, one mapping. The group of a transactional offset commit
// is judged as the group APIs judge theirs.)

// txnRefusal is the code refusing a transactional request for id, or 0.
// The tenant's prefix must not push the id past a Kafka string's length
// (the encoders would wrap it and the broker would get a malformed frame).
func (s *Session) txnRefusal(id string) int16 {
	switch {
	case !s.View.Transactions:
		return kerr.TransactionalIDAuthorizationFailed.Code
	case len(s.View.TxnName(""))+len(id) > codec.MaxString:
		return kerr.InvalidRequest.Code
	}
	return 0
}

// txnTopic judges a topic added to a transaction: the session must send to
// it, by an operation declaring transactions. It returns the physical name,
// or the code refusing the topic.
func (s *Session) txnTopic(short string) (string, int16) {
	phys, code := s.View.ProduceTopic([]byte(short))
	if code != 0 {
		return "", code
	}
	for _, op := range s.View.Ops {
		if op.Action == "send" && op.Channel == short && op.Transactions {
			return string(phys), 0
		}
	}
	return "", kerr.TopicAuthorizationFailed.Code
}
