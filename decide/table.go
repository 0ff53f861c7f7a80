package decide

import (
	"fmt"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kind is how the closed table treats an API key.
type Kind uint8

const (
	// Never: never announced; a client that sends it anyway is disconnected (D1).
	Never Kind = iota
	// Served: announced at the intersection with the brokers, judged per request.
	Served
	// Local: answered by the gateway itself (ApiVersions, SASL).
	Local
)

// reqFunc judges one request; see Session.Request. Every failure is an
// outcome: a Disconnect says its cause in p.Cause.
type reqFunc func(s *Session, h *codec.RequestHeader, body []byte, p *Pending) Outcome

// respFunc rewrites one broker answer into s.RW.Vec for the client.
type respFunc func(s *Session, p *Pending, body []byte) error

type api struct {
	kind     Kind
	min, max int16 // versions the gateway serves (before the intersection with the brokers)
	req      reqFunc
	resp     respFunc
	// why a Never key is never announced, for the log and the table test
	why string
}

var table [codec.MaxKey + 1]api

// reg registers an API served or answered by the gateway.
func reg(key int16, kind Kind, min, max int16, req reqFunc, resp respFunc) {
	if table[key].kind != Never || table[key].why != "" {
		panic(fmt.Sprintf("decide: key %d registered twice", key))
	}
	table[key] = api{kind: kind, min: min, max: max, req: req, resp: resp}
}

// never registers the APIs that are never announced, with the family they belong to.
func never(why string, keys ...int16) {
	for _, k := range keys {
		if table[k].kind != Never || table[k].why != "" {
			panic(fmt.Sprintf("decide: key %d registered twice", k))
		}
		table[k].why = why
	}
}

func init() {
	// Seed 002, the last row of the table: never announced, disconnect.
	never("acls", 29, 30, 31)
	never("quotas", 48, 49)
	never("scram credentials", 50, 51)
	never("reassignments", 45, 46, 34, 35, 43)
	never("delegation tokens", 38, 39, 40, 41)
	never("alter configs", 33)
	never("broker-to-broker", 4, 5, 6, 7, 27, 52, 53, 54, 55, 56, 57, 58, 59, 62, 63, 64, 67, 70, 73, 80, 81, 82, 94)
	never("kip-848 groups", 68, 69, 88, 89, 93)
	never("kip-932 groups", 76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92)
	never("telemetry", 71, 72)
	// Outside the seed's table: refused by omission, never announced.
	never("not in the table", 61, 65, 66, 74, 75)
}

// KindOf returns how the table treats key, and for a Never key why.
func KindOf(key int16) (Kind, string) {
	if !codec.Known(key) {
		return Never, "unknown to the gateway"
	}
	a := &table[key]
	return a.kind, a.why
}

// Name is the API's name, for logs, metrics and the audit, as Apache
// Kafka and the seeds spell it (SaslHandshake, InitProducerId): kmsg's own
// names where they agree, kafkaNames where kmsg writes Go acronyms.
func Name(key int16) string {
	if n, ok := kafkaNames[key]; ok {
		return n
	}
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return "Unknown"
}

// kafkaNames are the APIs Apache Kafka names otherwise than kmsg does
// (org.apache.kafka.common.protocol.ApiKeys, the seeds' tables).
var kafkaNames = map[int16]string{
	4:  "LeaderAndIsr",
	17: "SaslHandshake",
	22: "InitProducerId",
	29: "DescribeAcls",
	30: "CreateAcls",
	31: "DeleteAcls",
	36: "SaslAuthenticate",
	45: "AlterPartitionReassignments",
	50: "DescribeUserScramCredentials",
	51: "AlterUserScramCredentials",
	67: "AllocateProducerIds",
}
