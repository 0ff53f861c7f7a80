package decide

import (
	"testing"

	"github.com/flexway/flexway/codec"
)

// seedAPINames are the APIs the seeds' tables name (seed 002 "Served",
// "Refused"), as they spell them: the api label, the audit's operation and
// the log lines use these (issue 24.3).
var seedAPINames = []string{
	"Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
	"JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake",
	"ApiVersions", "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch",
	"AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "DescribeConfigs", "AlterConfigs",
	"SaslAuthenticate", "CreatePartitions", "DeleteGroups", "IncrementalAlterConfigs", "OffsetDelete",
	"DescribeCluster",
}

// O1, O3 (issue 24.3): every key the gateway serves or answers itself is
// named as the seeds name it, and every name the seeds give is a key's.
func TestNamesAreTheSeeds(t *testing.T) {
	seed := map[string]bool{}
	for _, n := range seedAPINames {
		seed[n] = true
	}
	named := map[string]bool{}
	for k := int16(0); k <= codec.MaxKey; k++ {
		n := Name(k)
		named[n] = true
		if table[k].kind != Never && !seed[n] {
			t.Errorf("key %d, served, is named %q: not a name of the seeds", k, n)
		}
	}
	for n := range seed {
		if !named[n] {
			t.Errorf("the seeds name %q, no key is named so", n)
		}
	}
	for k, want := range map[int16]string{17: "SaslHandshake", 36: "SaslAuthenticate", 22: "InitProducerId", 29: "DescribeAcls", 50: "DescribeUserScramCredentials"} {
		if got := Name(k); got != want {
			t.Errorf("Name(%d) = %q, want %q", k, got, want)
		}
	}
}
