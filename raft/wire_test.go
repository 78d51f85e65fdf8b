package raft

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// roundTrip sends req to the controller at addr as a Kafka client would
// and returns the answer.
func roundTrip(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	return roundTripAs(t, addr, "test-client", req)
}

// roundTripAs is roundTrip with the request header's client id set to
// clientID.
func roundTripAs(t *testing.T, addr, clientID string, req kmsg.Request) kmsg.Response {
	t.Helper()
	cfg := transport.DefaultPeerConfig()
	cfg.Addr = addr
	cfg.ClientID = clientID
	cfg.RequestTimeout = 5 * time.Second
	p, err := transport.DialPeer(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	type outcome struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan outcome, 1)
	if !p.Send(req, func(resp kmsg.Response, err error) { done <- outcome{resp, err} }) {
		t.Fatal("Send refused the request")
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("%T: %v", req, o.err)
	}
	return o.resp
}

// TestWireDescribeQuorumAndApiVersions: the leader answers DescribeQuorum
// with every voter (RaftUtil.singletonDescribeQuorumResponse); a follower answers
// NOT_LEADER_OR_FOLLOWER; ApiVersions lists the KRaft APIs and the
// finalized metadata.version.
func TestWireDescribeQuorumAndApiVersions(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)

	describe := func(id NodeID) *kmsg.DescribeQuorumResponseTopicPartition {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.SetVersion(2)
		topic := kmsg.NewDescribeQuorumRequestTopic()
		topic.Topic = wire.MetadataTopic
		topic.Partitions = append(topic.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, topic)
		resp := roundTrip(t, c.node(id).Addr().String(), req).(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeQuorum from %d = %+v", id, resp)
		}
		if id == leader && len(resp.Nodes) != 3 {
			t.Errorf("DescribeQuorum v2 lists %d nodes, want 3", len(resp.Nodes))
		}
		return &resp.Topics[0].Partitions[0]
	}
	p := describe(leader)
	if p.ErrorCode != 0 || NodeID(p.LeaderID) != leader || len(p.CurrentVoters) != 3 || p.HighWatermark <= res.LastOffset {
		t.Errorf("leader's DescribeQuorum partition = %+v", p)
	}
	for _, v := range p.CurrentVoters {
		if NodeID(v.ReplicaID) == leader && v.LogEndOffset <= res.LastOffset {
			t.Errorf("leader's own log end offset %d, want past %d", v.LogEndOffset, res.LastOffset)
		}
	}
	if p := describe(c.follower(leader)); p.ErrorCode != kerr.NotLeaderForPartition.Code || NodeID(p.LeaderID) != leader {
		t.Errorf("follower's DescribeQuorum partition = %+v, want NOT_LEADER_OR_FOLLOWER naming %d", p, leader)
	}

	// A request for another partition gets UNKNOWN_TOPIC_OR_PARTITION for
	// every partition it names.
	bad := kmsg.NewPtrDescribeQuorumRequest()
	bad.SetVersion(2)
	bt := kmsg.NewDescribeQuorumRequestTopic()
	bt.Topic = "other"
	bt.Partitions = append(bt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition(), kmsg.NewDescribeQuorumRequestTopicPartition())
	bt.Partitions[1].Partition = 1
	bad.Topics = append(bad.Topics, bt)
	br := roundTrip(t, c.node(leader).Addr().String(), bad).(*kmsg.DescribeQuorumResponse)
	if len(br.Topics) != 1 || len(br.Topics[0].Partitions) != 2 || br.Topics[0].Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || br.Topics[0].Partitions[1].ErrorMessage == nil {
		t.Errorf("DescribeQuorum of another topic = %+v", br)
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	resp := roundTrip(t, c.node(leader).Addr().String(), av).(*kmsg.ApiVersionsResponse)
	keys := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = true
	}
	for _, k := range []int16{wire.KeyFetch, wire.KeyVote, wire.KeyBeginQuorumEpoch, wire.KeyEndQuorumEpoch, wire.KeyDescribeQuorum, wire.KeySubmitChange} {
		if !keys[k] {
			t.Errorf("ApiVersions lacks api key %d", k)
		}
	}
	found := false
	for _, f := range resp.FinalizedFeatures {
		if f.Name == metadata.FeatureMetadataVersion && f.MaxVersionLevel == metadata.MaxMetadataVersion {
			found = true
		}
	}
	if !found {
		t.Errorf("ApiVersions finalized features %+v lack metadata.version %d", resp.FinalizedFeatures, metadata.MaxMetadataVersion)
	}
}

// TestWireSubmitChange: the private SubmitChange RPC commits on the leader,
// is answered NOT_LEADER_OR_FOLLOWER with the leader's id by a follower
// (never forwarded twice), and INVALID_REQUEST for bytes that are not a
// metadata record.
func TestWireSubmitChange(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	enc, err := metadata.Encode(metadataVersionRecord())
	if err != nil {
		t.Fatal(err)
	}
	send := func(id NodeID, records ...[]byte) *wire.SubmitChangeResponse {
		req := wire.NewSubmitChangeRequest()
		req.Records = records
		return roundTrip(t, c.node(id).Addr().String(), req).(*wire.SubmitChangeResponse)
	}
	var r *wire.SubmitChangeResponse
	// The new leader takes changes once its LeaderChange has committed;
	// until then the request waits, so one attempt suffices.
	r = send(leader, enc)
	if r.ErrorCode != 0 || r.BaseOffset < 1 || r.Epoch != c.node(leader).QuorumState().Epoch {
		t.Errorf("SubmitChange to the leader = %+v", r)
	}
	f := c.follower(leader)
	r = send(f, enc)
	if r.ErrorCode != kerr.NotLeaderForPartition.Code || NodeID(r.LeaderID) != leader {
		t.Errorf("SubmitChange to follower %d = %+v, want NOT_LEADER_OR_FOLLOWER naming %d", f, r, leader)
	}
	r = send(leader, []byte{1, 2, 3})
	if r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("SubmitChange of garbage = %+v, want INVALID_REQUEST", r)
	}
}

// TestSingleNodeRestart: a lone voter (Config ForTests) elects itself,
// commits alone, and after a restart replays its log into the image.
func TestSingleNodeRestart(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := submit(t, n, metadataVersionRecord(), topicRecord("solo"))
	if err := n.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.SubmitChange(t.Context(), []metadata.Record{topicRecord("late")}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("SubmitChange after Shutdown: err = %v, want ErrShuttingDown", err)
	}

	n, err = Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the restarted node to replay its log", func() bool {
		return n.QuorumState().AppliedOffset > res.LastOffset
	})
	if _, ok := n.CurrentImage().Topics().ByName("solo"); !ok {
		t.Error("restarted node: image has no topic solo")
	}
	st := n.QuorumState()
	if st.Role != RoleLeader || st.Epoch <= res.Epoch {
		t.Errorf("restarted node state %+v, want Leader in an epoch after %d", st, res.Epoch)
	}
}

// TestWireClusterIDChecked: formatted nodes of one cluster form a quorum;
// a KRaft request naming another cluster id is answered
// INCONSISTENT_CLUSTER_ID at the top level (KafkaRaftClient's request handlers).
func TestWireClusterIDChecked(t *testing.T) {
	c := newFormattedCluster(t, 3, "krabka-test-cluster")
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())

	req, err := wire.KmsgRequest(&kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 9}, Voter: kraft.ReplicaKey{ID: kraft.NoNode}, ReplicaEpoch: 100}, "another-cluster")
	if err != nil {
		t.Fatal(err)
	}
	resp := roundTrip(t, c.node(leader).Addr().String(), req).(*kmsg.VoteResponse)
	if resp.ErrorCode != kerr.InconsistentClusterID.Code || len(resp.Topics) != 0 {
		t.Errorf("Vote from another cluster = %+v, want top-level INCONSISTENT_CLUSTER_ID", resp)
	}
	if st := c.node(leader).QuorumState(); st.Role != RoleLeader {
		t.Errorf("the foreign vote request disturbed the leader: %+v", st)
	}
}

// TestWireMetadataFetch: any voter serves committed batches over the
// private MetadataFetch RPC, never one at or past its high watermark, and
// an observer reading them all sees every committed record.
func TestWireMetadataFetch(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	submit(t, c.node(leader), metadataVersionRecord())
	last := submit(t, c.node(leader), topicRecord("orders"), topicRecord("payments"))
	c.waitApplied(last.LastOffset + 1)

	f := c.follower(leader)
	topics := map[string]bool{}
	var offset int64
	for {
		req := wire.NewMetadataFetchRequest()
		req.FetchOffset, req.MaxBytes = offset, 1 // one batch at a time
		resp := roundTrip(t, c.node(f).Addr().String(), req).(*wire.MetadataFetchResponse)
		if resp.ErrorCode != 0 || NodeID(resp.LeaderID) != leader || resp.HighWatermark <= last.LastOffset {
			t.Fatalf("MetadataFetch at %d = %+v", offset, resp)
		}
		if len(resp.Records) == 0 {
			break
		}
		it := recordbatch.NewIterator(nil, resp.Records)
		for it.Next() {
			b := it.Batch()
			if b.NextOffset() > resp.HighWatermark {
				t.Errorf("batch [%d, %d) reaches past the high watermark %d", b.BaseOffset, b.NextOffset(), resp.HighWatermark)
			}
			for _, r := range b.Records {
				if b.IsControl() {
					continue
				}
				rec, err := metadata.Decode(r.Value)
				if err != nil {
					t.Fatal(err)
				}
				if tr, ok := rec.(*metadata.TopicRecord); ok {
					topics[tr.Name] = true
				}
			}
			offset = b.NextOffset()
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	if !topics["orders"] || !topics["payments"] {
		t.Errorf("MetadataFetch delivered topics %v, want orders and payments", topics)
	}
}

// TestWireVoterRPCs: on a static quorum (kraft.version 0) the leader runs
// Kafka's checks for AddRaftVoter and RemoveRaftVoter and then refuses
// them with UNSUPPORTED_VERSION; UpdateRaftVoter from a voter succeeds
// without a write and names the leader (KIP-853; Kafka's AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler).
func TestWireVoterRPCs(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	res := submit(t, c.node(leader), metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	addr := c.node(leader).Addr().String()
	epoch := c.node(leader).QuorumState().Epoch
	dir := [16]byte{9}

	add := func(id int32, dir [16]byte, listener string) *kmsg.AddRaftVoterResponse {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.VoterDirectoryID = id, dir
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = listener, "127.0.0.1", 1
		req.Listeners = append(req.Listeners, l)
		return roundTrip(t, addr, req).(*kmsg.AddRaftVoterResponse)
	}
	for _, tt := range []struct {
		name string
		got  int16
		want *kerr.Error
	}{
		{"add", add(4, dir, "CONTROLLER").ErrorCode, kerr.UnsupportedVersion},
		{"add without directory id", add(4, [16]byte{}, "CONTROLLER").ErrorCode, kerr.InvalidRequest},
		{"add negative id", add(-1, dir, "CONTROLLER").ErrorCode, kerr.InvalidRequest},
		{"add without the controller listener", add(4, dir, "OTHER").ErrorCode, kerr.InvalidRequest},
	} {
		if tt.got != tt.want.Code {
			t.Errorf("%s: code %d, want %s", tt.name, tt.got, tt.want.Message)
		}
	}
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID, rm.VoterDirectoryID = 3, dir
	if r := roundTrip(t, addr, rm).(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.UnsupportedVersion.Code || r.ErrorMessage == nil {
		t.Errorf("RemoveRaftVoter = %+v, want UNSUPPORTED_VERSION with a message", r)
	}
	rm.VoterID = 2
	if r := roundTrip(t, c.node(c.follower(leader)).Addr().String(), rm).(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("RemoveRaftVoter on a follower = %+v, want NOT_LEADER_OR_FOLLOWER", r)
	}

	update := func(id int32, epoch int32) *kmsg.UpdateRaftVoterResponse {
		req := kmsg.NewPtrUpdateRaftVoterRequest()
		req.CurrentLeaderEpoch, req.VoterID, req.VoterDirectoryID = epoch, id, dir
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
		req.Listeners = append(req.Listeners, l)
		req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = 0, 1
		return roundTrip(t, addr, req).(*kmsg.UpdateRaftVoterResponse)
	}
	r := update(int32(c.follower(leader)), epoch)
	if r.ErrorCode != 0 || NodeID(r.CurrentLeader.LeaderID) != leader || r.CurrentLeader.LeaderEpoch != epoch || r.CurrentLeader.Port != int32(c.cfgs[leader-1].Listeners[0].Port) {
		t.Errorf("UpdateRaftVoter = %+v", r)
	}
	if r := update(2, epoch+1); r.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("UpdateRaftVoter from a later epoch: code %d, want UNKNOWN_LEADER_EPOCH", r.ErrorCode)
	}
	if r := update(9, epoch); r.ErrorCode != kerr.VoterNotFound.Code {
		t.Errorf("UpdateRaftVoter from a non-voter: code %d, want VOTER_NOT_FOUND", r.ErrorCode)
	}
}

// TestWireNodeEndpoints: an answer naming the leader carries the leader's
// endpoint (KafkaRaftClient's request handlers), so a replica can reach a leader it learns of.
func TestWireNodeEndpoints(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	f := c.follower(leader)
	epoch := c.node(f).QuorumState().Epoch
	req, err := wire.KmsgRequest(&kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 9}, Voter: kraft.ReplicaKey{ID: kraft.NoNode},
		ReplicaEpoch: kraft.Epoch(epoch), PreVote: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	req.SetVersion(2)
	resp := roundTrip(t, c.node(f).Addr().String(), req).(*kmsg.VoteResponse)
	if len(resp.Topics) != 1 || NodeID(resp.Topics[0].Partitions[0].LeaderID) != leader {
		t.Fatalf("pre-vote answer = %+v, want one naming leader %d", resp, leader)
	}
	want := c.cfgs[leader-1].QuorumVoters[leader-1]
	if len(resp.NodeEndpoints) != 1 || NodeID(resp.NodeEndpoints[0].NodeID) != leader || resp.NodeEndpoints[0].Port != want.Port || resp.NodeEndpoints[0].Host != want.Host {
		t.Errorf("NodeEndpoints = %+v, want leader %d at %s", resp.NodeEndpoints, leader, want.Address())
	}
}
