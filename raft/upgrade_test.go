package raft

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/vfs"
)

// staticDirID is node id's directory id in newFormattedCluster.
func staticDirID(id NodeID) [16]byte { return [16]byte{0xd1, byte(id)} }

// updateFeatures sends UpdateFeatures (version v) for kraft.version=level
// to the node at addr.
func updateFeatures(t *testing.T, addr string, v int16, level int16, validateOnly bool) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.TimeoutMillis, req.ValidateOnly = v, 5000, validateOnly
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "kraft.version", level, upgradeTypeUpgrade
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	return roundTrip(t, addr, req).(*kmsg.UpdateFeaturesResponse)
}

// upgradeWhenReported sends the kraft.version upgrade to the leader until
// the voters have reported to it (until then the leader refuses with
// INVALID_UPDATE_VERSION) and returns the accepting answer.
func upgradeWhenReported(t *testing.T, c *testCluster, validateOnly bool) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	var resp *kmsg.UpdateFeaturesResponse
	waitFor(t, "the leader to accept the kraft.version upgrade", func() bool {
		resp = updateFeatures(t, c.node(c.leader()).Addr().String(), 2, 1, validateOnly)
		switch resp.ErrorCode {
		case 0:
			return true
		case kerr.InvalidUpdateVersion.Code, kerr.NotController.Code:
			return false
		}
		t.Fatalf("UpdateFeatures: code %d %v", resp.ErrorCode, resp.ErrorMessage)
		return false
	})
	return resp
}

// TestStaticQuorumUpgrade: a quorum started from controller.quorum.voters
// (kraft.version 0) upgrades to kraft.version 1 through UpdateFeatures
// (KIP-853, KafkaRaftClient.upgradeKRaftVersion): the voters report their
// endpoints, a dry run changes nothing, the upgrade writes one Voters
// record with the voters' directory ids and endpoints; then a fourth node
// joins as an observer and is added, a voter is removed, and nodes
// restarted with controller.quorum.bootstrap.servers or still with
// controller.quorum.voters keep everything committed.
func TestStaticQuorumUpgrade(t *testing.T) {
	c := newFormattedCluster(t, 3, "static-upgrade-id-0001")
	res := c.submitRetrying(metadataVersionRecord(), topicRecord("before"))
	c.waitApplied(res.LastOffset + 1)

	upgradeWhenReported(t, c, true)
	for id := NodeID(1); id <= 3; id++ {
		if level, ok := finalizedLevel(t, c.node(id).Addr().String(), "kraft.version"); ok {
			t.Fatalf("node %d finalizes kraft.version %d after a dry run", id, level)
		}
	}
	if err := c.node(c.leader()).AddVoter(t.Context(), Voter{ID: 4, DirectoryID: dirID(4), Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}}); !errors.Is(err, ErrStaticQuorum) {
		t.Fatalf("AddVoter before the upgrade: %v, want ErrStaticQuorum", err)
	}

	resp := upgradeWhenReported(t, c, false)
	if len(resp.Results) != 0 || resp.ErrorMessage != nil {
		t.Errorf("UpdateFeatures v2 success: %d results, message %v; want none", len(resp.Results), resp.ErrorMessage)
	}
	for id := NodeID(1); id <= 3; id++ {
		waitFor(t, "kraft.version 1 on every node", func() bool {
			level, ok := finalizedLevel(t, c.node(id).Addr().String(), "kraft.version")
			return ok && level == 1
		})
	}
	leader := c.leader()
	voters := c.node(leader).eng.pub.voterList()
	if len(voters) != 3 {
		t.Fatalf("voter set %+v, want 3 voters", voters)
	}
	for _, v := range voters {
		if v.dir != staticDirID(v.id) {
			t.Errorf("voter %d: directory id %x, want %x", v.id, v.dir, staticDirID(v.id))
		}
		if ep, ok := v.endpoint("CONTROLLER"); !ok || ep.Port != c.cfgs[v.id-1].Listeners[0].Port {
			t.Errorf("voter %d: endpoint %+v, want port %d", v.id, ep, c.cfgs[v.id-1].Listeners[0].Port)
		}
	}
	// A second upgrade is done already.
	if resp := updateFeatures(t, c.node(leader).Addr().String(), 1, 1, false); resp.ErrorCode != 0 || len(resp.Results) != 1 {
		t.Errorf("UpdateFeatures v1 at kraft.version 1: code %d, %d results", resp.ErrorCode, len(resp.Results))
	}

	// A fourth controller joins as an observer and is added as a voter.
	ln := sharedtest.ListenFixed(t)
	cfg := ForTests(4, t.TempDir())
	cfg.Listeners[0].Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	cfg.QuorumVoters = nil
	for _, other := range c.cfgs {
		cfg.QuorumBootstrapServers = append(cfg.QuorumBootstrapServers, HostPort{Host: "127.0.0.1", Port: other.Listeners[0].Port})
	}
	mp := logstore.MetaProperties{Version: 1, ClusterID: "static-upgrade-id-0001", NodeID: 4, DirectoryID: kraft.UUID(dirID(4))}
	if err := logstore.WriteMetaProperties(vfs.OS(), cfg.MetadataLogDir, mp, time.Now()); err != nil {
		t.Fatal(err)
	}
	c.cfgs = append(c.cfgs, cfg)
	c.nodes = append(c.nodes, nil)
	c.cancels = append(c.cancels, nil)
	lns := []net.Listener{nil, nil, nil, ln}
	c.startNode(4, lns)
	c.waitMembers([]NodeID{1, 2, 3}, []NodeID{4})
	c.changeVoters(c.leader, true, 4)
	c.waitMembers([]NodeID{1, 2, 3, 4}, nil)

	// Remove voter 3 (its directory id is the static one).
	waitFor(t, "the removal of voter 3", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		err := c.node(c.leader()).RemoveVoter(ctx, 3, staticDirID(3))
		if err != nil && !errors.Is(err, ErrChangeUnavailable) && !errors.Is(err, ErrLeaderUnknown) {
			t.Fatalf("RemoveVoter 3: %v", err)
		}
		return err == nil
	})
	c.waitMembers([]NodeID{1, 2, 4}, nil)
	c.stop(3)
	res = c.submitRetrying(topicRecord("after"))

	// Node 1 restarts on controller.quorum.bootstrap.servers, node 2 on
	// controller.quorum.voters still: both read the voter set from the
	// log.
	c.stop(1)
	c.cfgs[0].QuorumBootstrapServers = slices.Clone(c.cfgs[3].QuorumBootstrapServers)
	c.cfgs[0].QuorumVoters = nil
	c.restart(1)
	c.stop(2)
	c.restart(2)
	res2 := c.submitRetrying(topicRecord("restarted"))
	c.waitApplied(max(res.LastOffset, res2.LastOffset) + 1)
	c.waitMembers([]NodeID{1, 2, 4}, nil)
	for _, id := range []NodeID{1, 2, 4} {
		img := c.node(id).CurrentImage()
		for _, topic := range []string{"before", "after", "restarted"} {
			if _, ok := img.Topics().ByName(topic); !ok {
				t.Errorf("node %d: topic %q missing", id, topic)
			}
		}
		if level, ok := finalizedLevel(t, c.node(id).Addr().String(), "kraft.version"); !ok || level != 1 {
			t.Errorf("node %d: kraft.version %d (%v) after the restarts, want 1", id, level, ok)
		}
	}
}

// TestStaticQuorumUpgradeRefused: voters that cannot report (no
// directory.id in meta.properties) keep the quorum at kraft.version 0;
// the leader refuses with INVALID_UPDATE_VERSION and Kafka's reason, and
// a follower answers NOT_CONTROLLER.
func TestStaticQuorumUpgradeRefused(t *testing.T) {
	c := newTestCluster(t, 3)
	res := c.submitRetrying(metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	leader := c.leader()
	resp := updateFeatures(t, c.node(leader).Addr().String(), 1, 1, false)
	const want = "The update failed for all features since the following feature had an error: " +
		"Invalid upgrade of kraft.version to 1 because not all of the voters support it"
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || !strings.HasPrefix(*resp.ErrorMessage, want) || len(resp.Results) != 0 {
		t.Errorf("UpdateFeatures: code %d, message %v, %d results; want %d, %q…, none", resp.ErrorCode, resp.ErrorMessage, len(resp.Results), kerr.InvalidUpdateVersion.Code, want)
	}
	if resp := updateFeatures(t, c.node(c.follower(leader)).Addr().String(), 2, 1, false); resp.ErrorCode != kerr.NotController.Code {
		t.Errorf("UpdateFeatures on a follower: code %d, want NOT_CONTROLLER", resp.ErrorCode)
	}
	// The Go API, through a follower, gets the leader's reason.
	err := c.node(c.follower(leader)).UpgradeKRaftVersion(t.Context(), false)
	if fe, ok := errors.AsType[*FeatureUpdateError](err); !ok || !errors.Is(err, ErrInvalidFeatureUpdate) ||
		!strings.HasPrefix(fe.Message, "Invalid upgrade of kraft.version to 1 because not all of the voters support it") {
		t.Errorf("UpgradeKRaftVersion through a follower: %v, want the leader's FeatureUpdateError", err)
	}
	if level, ok := finalizedLevel(t, c.node(leader).Addr().String(), "kraft.version"); ok {
		t.Errorf("kraft.version %d finalized after a refused upgrade", level)
	}
}

// TestUpgradeKRaftVersionThroughAFollower: Controller.UpgradeKRaftVersion
// on a follower is carried out by the leader: a dry run first, then the
// upgrade, after which every node runs kraft.version 1 and a second call
// is done at once.
func TestUpgradeKRaftVersionThroughAFollower(t *testing.T) {
	c := newFormattedCluster(t, 3, "static-upgrade-id-0002")
	res := c.submitRetrying(metadataVersionRecord())
	c.waitApplied(res.LastOffset + 1)
	for _, validateOnly := range []bool{true, false} {
		waitFor(t, "the upgrade through a follower", func() bool {
			err := c.node(c.follower(c.leader())).UpgradeKRaftVersion(t.Context(), validateOnly)
			switch {
			case err == nil:
				return true
			case errors.Is(err, ErrInvalidFeatureUpdate), errors.Is(err, ErrLeaderUnknown), errors.Is(err, ErrChangeUnavailable):
				return false
			}
			t.Fatalf("UpgradeKRaftVersion(validateOnly %v): %v", validateOnly, err)
			return false
		})
		if validateOnly && c.node(c.leader()).eng.pub.finalizedKRaftVersion() != 0 {
			t.Fatal("a dry run upgraded kraft.version")
		}
	}
	for id := NodeID(1); id <= 3; id++ {
		waitFor(t, "kraft.version 1", func() bool { return c.node(id).eng.pub.finalizedKRaftVersion() == 1 })
	}
	if err := c.node(c.leader()).UpgradeKRaftVersion(t.Context(), false); err != nil {
		t.Errorf("UpgradeKRaftVersion at kraft.version 1: %v", err)
	}
}

// The upgrade's voter set takes each voter's endpoint from what it
// advertises; a voter named at another address than
// controller.quorum.voters is reported (the leader warns), one at the
// same address is not.
func TestMovedVoters(t *testing.T) {
	static := []QuorumVoter{{ID: 1, Host: "10.0.0.1", Port: 9093}, {ID: 2, Host: "10.0.0.2", Port: 9093}, {ID: 3, Host: "10.0.0.3", Port: 9093}}
	rec := control.NewVotersRecord()
	rec.Voters = []control.VotersRecordVoter{
		{VoterId: 1, Endpoints: []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "10.0.0.1", Port: 9093}}},
		{VoterId: 2, Endpoints: []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}}},
		{VoterId: 3, Endpoints: []control.VotersRecordEndpoint{{Name: "OTHER", Host: "10.0.0.3", Port: 9093}}},
	}
	var got []string
	for _, attrs := range movedVoters(static, rec, "CONTROLLER") {
		var parts []string
		for _, a := range attrs {
			parts = append(parts, a.String())
		}
		got = append(got, strings.Join(parts, " "))
	}
	want := []string{"peer=2 addr=localhost:9093 static_addr=10.0.0.2:9093", "peer=3 addr=none on CONTROLLER static_addr=10.0.0.3:9093"}
	if !slices.Equal(got, want) {
		t.Errorf("movedVoters = %q, want %q", got, want)
	}
}
