package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/raft"
)

// controlRecordsAfter returns the control records of the log of the
// metadata log directory dir from offset on, with their batches' epochs.
func controlRecordsAfter(t *testing.T, dir string, offset int64) (msgs []control.Message, epochs []int32) {
	t.Helper()
	l, _, err := logstore.Open(vfs.OS(), filepath.Join(dir, raft.PartitionDirName), logstore.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for offset < l.LogEndOffset() {
		res, err := l.Read(offset, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b, err := recordbatch.Parse(res.Batches)
		if err != nil {
			t.Fatal(err)
		}
		if b.Header.IsControl() {
			for _, rec := range b.Records {
				m, err := control.Decode(rec.Key, rec.Value)
				if err != nil {
					t.Fatal(err)
				}
				msgs, epochs = append(msgs, m), append(epochs, b.Header.PartitionLeaderEpoch)
			}
		}
		offset = b.Header.NextOffset()
	}
	return msgs, epochs
}

func TestForceStandaloneRefusals(t *testing.T) {
	n := newTestNode(t, 1, "controller.quorum.voters=1@localhost:9093,2@localhost:9094,3@localhost:9095")
	mustFail(t, `required flag(s) "config" not set`, "storage", "unsafe-force-standalone")
	mustFail(t, "controller.quorum.voters still lists voters 2,3; edit it to this node alone (1@host:port) first", "storage", "unsafe-force-standalone", "-c", n.props)

	n = newTestNode(t, 1, staticVoters)
	if err := os.MkdirAll(n.meta, 0o755); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "metadata log directory "+n.meta+" is not formatted (no meta.properties)", "storage", "unsafe-force-standalone", "-c", n.props)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	lock, err := logstore.LockDir(vfs.OS(), n.meta)
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, "metadata log directory "+n.meta+" is locked: a node is running on it; stop it first", "storage", "unsafe-force-standalone", "-c", n.props)
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if r := logEndJSON(t, n.props); r.LogEndOffset != 0 || r.QuorumState != nil {
		t.Errorf("a refused command changed the node: %+v", r)
	}
}

// TestForceStandaloneStatic: on a static node the command appends a
// LeaderChange 1000 epochs above the highest it knows and writes
// quorum-state with the node as that epoch's leader.
func TestForceStandaloneStatic(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	part := filepath.Join(n.meta, raft.PartitionDirName)
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := logstore.WriteQuorumState(vfs.OS(), part, logstore.QuorumStateData{LeaderID: 2, LeaderEpoch: 7, VotedID: kraft.NoNode}); err != nil {
		t.Fatal(err)
	}
	out := mustSucceed(t, "storage", "unsafe-force-standalone", "-c", n.props).stdout
	for _, want := range []string{
		"Node 1: log end offset 0 at epoch 0, highest known epoch 7",
		"appended a LeaderChange at offset 0, epoch 1007, with node 1 as the only voter,",
		"Records committed by the lost voters after offset 0 are lost.",
		"--cluster-id " + testClusterID,
		"edit controller.quorum.voters",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r := logEndJSON(t, n.props)
	if r.LogEndOffset != 1 || r.LogEndEpoch != 1007 || r.QuorumState == nil || *r.QuorumState != (quorumStateFile{LeaderEpoch: 1007, LeaderID: 1, VotedID: -1}) {
		t.Errorf("after: log end %d epoch %d, quorum state %+v", r.LogEndOffset, r.LogEndEpoch, r.QuorumState)
	}
	msgs, epochs := controlRecordsAfter(t, n.meta, 0)
	if len(msgs) != 1 || epochs[0] != 1007 {
		t.Fatalf("control records %v at epochs %v, want one LeaderChange at 1007", msgs, epochs)
	}
	lc, ok := msgs[0].(*control.LeaderChangeMessage)
	if !ok || lc.LeaderId != 1 || fmt.Sprint(lc.Voters) != fmt.Sprint([]control.LeaderChangeMessageVoter{{VoterId: 1}}) {
		t.Errorf("record %+v, want a LeaderChange with leader 1 and voters [1]", msgs[0])
	}
}

// TestForceStandaloneDynamic: on a dynamic node the command also appends a
// VotersRecord with only this node, its directory id and endpoint.
func TestForceStandaloneDynamic(t *testing.T) {
	node := newDynamicNodes(t, 1)[0]
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", node.props, "--standalone")
	dirID := readMeta(t, node.meta).DirectoryID
	out := mustSucceed(t, "storage", "unsafe-force-standalone", "-c", node.props).stdout
	if !strings.Contains(out, "epoch 1000, with node 1 as the only voter (and a VotersRecord)") || !strings.Contains(out, "add-controller") {
		t.Errorf("output:\n%s", out)
	}
	r := logEndJSON(t, node.props)
	want := []voter{{ID: 1, DirectoryID: dirID.String(), Endpoints: []string{"CONTROLLER://" + node.addr}}}
	if r.LogEndOffset != 2 || r.LogEndEpoch != 1000 || r.Voters.Source != votersFromLog || fmt.Sprint(r.Voters.Voters) != fmt.Sprint(want) {
		t.Errorf("after: log end %d epoch %d voters %+v, want %+v from the log", r.LogEndOffset, r.LogEndEpoch, r.Voters, want)
	}
	if q := r.QuorumState; q == nil || *q != (quorumStateFile{DataVersion: 1, LeaderEpoch: 1000, LeaderID: 1, VotedID: -1}) {
		t.Errorf("quorum state %+v", q)
	}
	msgs, _ := controlRecordsAfter(t, node.meta, 0)
	if len(msgs) != 2 {
		t.Fatalf("control records %v", msgs)
	}
	if vr, ok := msgs[1].(*control.VotersRecord); !ok || len(vr.Voters) != 1 || vr.Voters[0].VoterDirectoryId != [16]byte(dirID) {
		t.Errorf("second record %+v, want a VotersRecord of node 1", msgs[1])
	}
}

// TestForceStandaloneKafkaLog: on a copy of a Kafka 3.9 node's directory
// the LeaderChange goes after the last batch; on a log cut short of the
// newest snapshot it goes at the snapshot's end offset, where the node
// restarts its log.
func TestForceStandaloneKafkaLog(t *testing.T) {
	for _, cut := range []bool{false, true} {
		dir := copyDir(t, filepath.Join(samplesDir(t), "kafka39-single-logstart"))
		if cut {
			seg := filepath.Join(dir, raft.PartitionDirName, "00000000000000128356.log")
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, seg, data[:batchStarts(data, 1001)[1000]])
		}
		props := logEndProps(t, 1, dir, staticVoters)
		before := logEndJSON(t, props)
		if cut && before.LogEndOffset != 149809 {
			t.Fatalf("cut log: log end %d, want the snapshot's 149809", before.LogEndOffset)
		}
		out := mustSucceed(t, "storage", "unsafe-force-standalone", "-c", props).stdout
		if want := fmt.Sprintf("appended a LeaderChange at offset %d, epoch %d,", before.LogEndOffset, before.LogEndEpoch+standaloneEpochJump); !strings.Contains(out, want) {
			t.Errorf("cut %v: output lacks %q:\n%s", cut, want, out)
		}
		after := logEndJSON(t, props)
		if after.LogEndOffset != before.LogEndOffset+1 || after.LogEndEpoch != before.LogEndEpoch+standaloneEpochJump || len(after.Notes) != 0 {
			t.Errorf("cut %v: after: %+v; before: log end %d epoch %d", cut, after, before.LogEndOffset, before.LogEndEpoch)
		}
	}
}
