package decide

// DescribeGroups (key 15), versions 0-6: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED for each group otherwise); group ids mapped
// both ways (N1, N2); authorized operations never asked. In the answer a
// member's ClientHost is blanked (D6, D9), its client id shown as the
// client wrote it (<tenant>. stripped; blanked if it is not the tenant's),
// and with the consumer protocol its subscription and assignment mapped
// back like JoinGroup's and SyncGroup's (see groups.go).

import (
	"math"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(15, 0, 6, describeGroupsRequest, describeGroupsResponse) }

func describeGroupsRequest(s *Session, h *codec.RequestHeader, req *kmsg.DescribeGroupsRequest, p *Pending) Outcome {
	code := s.refuseGroups()
	if code == 0 {
		for _, g := range req.Groups {
			if _, ok := s.groupName(g); !ok {
				code = kerr.InvalidGroupID.Code
			}
		}
	}
	if code != 0 {
		if len(req.Groups) > maxRefused {
			p.Cause = "DescribeGroups refused for too many groups"
			return Disconnect
		}
		return refuse(s, p, code, func(r *kmsg.DescribeGroupsResponse) {
			for _, g := range req.Groups {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode, rg.AuthorizedOperations = g, code, math.MinInt32
				r.Groups = append(r.Groups, rg)
			}
		})
	}
	for i, g := range req.Groups {
		req.Groups[i] = s.View.GroupName(g)
	}
	req.IncludeAuthorizedOperations = false
	p.Reserve = boundReserve(AnswerReserve + int64(len(req.Groups))*groupReserve)
	return s.forward(h, p, req)
}

func describeGroupsResponse(s *Session, p *Pending, resp *kmsg.DescribeGroupsResponse) {
	resp.Groups = mapBack(resp.Groups, func(g *kmsg.DescribeGroupsResponseGroup) *string { return &g.Group }, s.groupShort)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		g.AuthorizedOperations = math.MinInt32
		consumer := isConsumer(g.ProtocolType)
		for i := range g.Members {
			m := &g.Members[i]
			m.ClientHost = ""
			m.ClientID = s.clientIDShort(m.ClientID)
			if consumer {
				if len(m.ProtocolMetadata) > 0 {
					m.ProtocolMetadata = s.subscriptionBack(m.ProtocolMetadata)
				}
				m.MemberAssignment = s.assignmentBack(m.MemberAssignment)
			}
		}
	}
}
