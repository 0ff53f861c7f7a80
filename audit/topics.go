package audit

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestTopics returns the topics an administration request names, by
// the client's names (the request as the client sent it, body after the
// header), nil for a request that names none or does not read. The
// administration family is the seed's: CreateTopics, DeleteTopics,
// DeleteRecords, DescribeConfigs, CreatePartitions, DeleteGroups,
// IncrementalAlterConfigs, OffsetDelete.
func RequestTopics(key, version int16, body []byte) []string {
	req := kmsg.RequestForKey(key)
	if req == nil || !IsAdmin(key) {
		return nil
	}
	req.SetVersion(version)
	if req.ReadFrom(body) != nil {
		return nil
	}
	var out []string
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		for _, t := range r.Topics {
			out = append(out, t.Topic)
		}
	case *kmsg.DeleteTopicsRequest:
		out = append(out, r.TopicNames...)
		for _, t := range r.Topics {
			if t.Topic != nil {
				out = append(out, *t.Topic)
			}
		}
	case *kmsg.DeleteRecordsRequest:
		for _, t := range r.Topics {
			out = append(out, t.Topic)
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range r.Topics {
			out = append(out, t.Topic)
		}
	case *kmsg.DescribeConfigsRequest:
		for _, res := range r.Resources {
			if res.ResourceType == kmsg.ConfigResourceTypeTopic {
				out = append(out, res.ResourceName)
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, res := range r.Resources {
			if res.ResourceType == kmsg.ConfigResourceTypeTopic {
				out = append(out, res.ResourceName)
			}
		}
	case *kmsg.OffsetDeleteRequest:
		for _, t := range r.Topics {
			out = append(out, t.Topic)
		}
	}
	return out
}

// IsAdmin tells an administration API (seed 002's table, D8): the requests
// the audit writes even when allowed.
func IsAdmin(key int16) bool {
	switch key {
	case 19, 20, 21, 32, 33, 37, 42, 44, 47: // CreateTopics, DeleteTopics, DeleteRecords, DescribeConfigs, AlterConfigs, CreatePartitions, DeleteGroups, IncrementalAlterConfigs, OffsetDelete
		return true
	}
	return false
}
