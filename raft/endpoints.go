package raft

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Leader endpoints on the wire (KIP-853's NodeEndpoints): a leader names its own
// controller endpoint in BeginQuorumEpoch and EndQuorumEpoch v1+
// (LeaderEndpoints), and every answer that names a leader carries that
// leader's endpoint on the listener the request came in on (NodeEndpoints:
// Vote, BeginQuorumEpoch, EndQuorumEpoch and FetchSnapshot v1+, Fetch
// v17+), so that a replica that knows a leader's id also knows where to
// reach it. The endpoints come from the voter set in force
// (controller.quorum.voters, or the newest VotersRecord of a dynamic
// quorum), on the first controller listener, the only listener this
// runtime serves KRaft on.

// addLeaderEndpoints fills the LeaderEndpoints of a request this node sends
// as leader.
func (e *engine) addLeaderEndpoints(req kmsg.Request) {
	rc := &e.rc
	me, ok := e.pub.voterEndpoint(int32(rc.id), rc.listenerName)
	if !ok {
		return
	}
	switch r := req.(type) {
	case *kmsg.BeginQuorumEpochRequest:
		e := kmsg.NewBeginQuorumEpochRequestLeaderEndpoint()
		e.Name, e.Host, e.Port = rc.listenerName, me.Host, me.Port
		r.LeaderEndpoints = append(r.LeaderEndpoints[:0], e)
	case *kmsg.EndQuorumEpochRequest:
		e := kmsg.NewEndQuorumEpochRequestLeaderEndpoint()
		e.Name, e.Host, e.Port = rc.listenerName, me.Host, me.Port
		r.LeaderEndpoints = append(r.LeaderEndpoints[:0], e)
	}
}

// addNodeEndpoints fills the NodeEndpoints of an answer with the endpoint
// of the leader it names, when known.
func (e *engine) addNodeEndpoints(resp kmsg.Response) {
	var leader int32 = -1
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			leader = r.Topics[0].Partitions[0].LeaderID
		}
	case *kmsg.BeginQuorumEpochResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			leader = r.Topics[0].Partitions[0].LeaderID
		}
	case *kmsg.EndQuorumEpochResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			leader = r.Topics[0].Partitions[0].LeaderID
		}
	case *kmsg.FetchResponse:
		if r.Version >= 17 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			leader = r.Topics[0].Partitions[0].CurrentLeader.LeaderID
		}
	case *kmsg.FetchSnapshotResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			leader = r.Topics[0].Partitions[0].CurrentLeader.LeaderID
		}
	}
	v, ok := e.pub.voterEndpoint(leader, e.rc.listenerName)
	if leader < 0 || !ok || resp.GetVersion() < 1 {
		return
	}
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		e := kmsg.NewVoteResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = leader, v.Host, v.Port
		r.NodeEndpoints = append(r.NodeEndpoints, e)
	case *kmsg.BeginQuorumEpochResponse:
		e := kmsg.NewBeginQuorumEpochResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = leader, v.Host, v.Port
		r.NodeEndpoints = append(r.NodeEndpoints, e)
	case *kmsg.EndQuorumEpochResponse:
		e := kmsg.NewEndQuorumEpochResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = leader, v.Host, v.Port
		r.NodeEndpoints = append(r.NodeEndpoints, e)
	case *kmsg.FetchResponse:
		e := kmsg.NewFetchResponseBroker()
		e.NodeID, e.Host, e.Port = leader, v.Host, int32(v.Port)
		r.Brokers = append(r.Brokers, e)
	case *kmsg.FetchSnapshotResponse:
		e := kmsg.NewFetchSnapshotResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = leader, v.Host, v.Port
		r.NodeEndpoints = append(r.NodeEndpoints, e)
	}
}
