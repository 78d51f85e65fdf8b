package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// testQuorum is a running static quorum of cmd/krabka tests.
type testQuorum struct {
	nodes  []testNode
	ctls   []*raft.Controller
	ports  []int
	leader int // index of the leader when started
}

// addr returns the host:port of node i.
func (q testQuorum) addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", q.ports[i]) }

// newQuorumNodes writes the server.properties of n voters of a static
// quorum on free loopback ports.
func newQuorumNodes(t *testing.T, n int) testQuorum {
	t.Helper()
	var q testQuorum
	var voters []string
	for i := range n {
		q.ports = append(q.ports, freePort(t))
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, q.ports[i]))
	}
	for i := range n {
		q.nodes = append(q.nodes, newTestNode(t, i+1, fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", q.ports[i]),
			fmt.Sprintf("advertised.listeners=CONTROLLER://127.0.0.1:%d", q.ports[i]),
			"controller.quorum.voters="+strings.Join(voters, ","), "controller.quorum.election.timeout.ms=300"))
	}
	return q
}

// start launches every node and waits for a leader.
func (q *testQuorum) start(t *testing.T) {
	t.Helper()
	for _, n := range q.nodes {
		q.ctls = append(q.ctls, launchNode(t, n.props))
	}
	q.leader = -1
	for deadline := time.Now().Add(20 * time.Second); q.leader < 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 20s")
		}
		for i, c := range q.ctls {
			if c.QuorumState().Role == raft.RoleLeader {
				q.leader = i
			}
		}
	}
	// Every controller registers itself once it has caught up (KIP-919):
	// wait for the registrations, so that what the log holds from now on
	// is what the test writes.
	for deadline := time.Now().Add(20 * time.Second); !q.registered(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the controllers did not register within 20s")
		}
	}
}

// registered reports whether every node's image holds the registration
// of every node, or sets a metadata.version without controller
// registration.
func (q *testQuorum) registered() bool {
	for _, c := range q.ctls {
		img := c.CurrentImage()
		mv := img.Features().MetadataVersion()
		if mv == 0 || mv >= metadata.MetadataVersion3_7_IV0 && img.Cluster().NumControllers() != len(q.ctls) {
			return false
		}
	}
	return true
}

// snapshotSource is a running three-voter quorum with topics 0..4 in its
// newest snapshot and topics 5..7 committed after it.
type snapshotSource struct {
	testQuorum
	id    kraft.OffsetAndEpoch
	image []byte // the snapshot records of the image at the snapshot
}

// leaderSnapshotPath returns the path of the snapshot in the leader's
// metadata partition directory.
func (s snapshotSource) leaderSnapshotPath() string {
	return filepath.Join(s.nodes[s.leader].meta, metadataPartitionDir, snapshot.FileName(s.id))
}

func newSnapshotSource(t *testing.T) snapshotSource {
	t.Helper()
	s := snapshotSource{testQuorum: newQuorumNodes(t, 3)}
	for _, n := range s.nodes {
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	}
	s.start(t)
	leader := s.ctls[s.leader]
	submitTopics(t, leader, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	img, err := leader.ReadImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := leader.TriggerSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sid.EndOffset != img.Offset()+1 {
		t.Fatalf("snapshot %v does not end after the image read at %d", sid, img.Offset())
	}
	s.id = kraft.OffsetAndEpoch{Offset: kraft.Offset(sid.EndOffset), Epoch: kraft.Epoch(sid.Epoch)}
	s.image = imageRecords(t, img)
	submitTopics(t, leader, 5, 3)
	return s
}

// imageRecords returns the encoded snapshot records of img, concatenated.
func imageRecords(t *testing.T, img *metadata.Image) []byte {
	t.Helper()
	var out []byte
	for r := range img.SnapshotRecords() {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

// lastBatchPos returns the byte position of the last batch of a snapshot
// file: its footer batch.
func lastBatchPos(t *testing.T, data []byte) int {
	t.Helper()
	pos, last := 0, -1
	for pos+12 <= len(data) {
		last = pos
		pos += 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
	}
	if last < 0 || pos != len(data) {
		t.Fatalf("not a sequence of whole batches: %d bytes, next batch at %d", len(data), pos)
	}
	return last
}

// damagedCopies returns the ways a snapshot file is damaged in the tests
// with what the failing command says: a flipped byte in a record, the
// file cut short, the footer batch missing.
func damagedCopies(t *testing.T, good []byte) map[string][]byte {
	t.Helper()
	flipped := bytes.Clone(good)
	flipped[len(good)/2] ^= 0x40
	return map[string][]byte{
		"flipped byte":   flipped,
		"truncated":      bytes.Clone(good[:len(good)-7]),
		"missing footer": bytes.Clone(good[:lastBatchPos(t, good)]),
	}
}

func TestSnapshotSave(t *testing.T) {
	s := newSnapshotSource(t)
	// Many chunks, each continuing at the position after the last.
	defer func(n int32) { snapshotChunkBytes = n }(snapshotChunkBytes)
	snapshotChunkBytes = 97
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.checkpoint")
	save := func(args ...string) []string {
		// A follower's address: save finds the leader through it.
		return append([]string{"metadata-quorum", "--bootstrap-controller", s.addr((s.leader + 1) % 3), "snapshot", "save", file}, args...)
	}
	r := mustSucceed(t, save()...)
	want, err := os.ReadFile(s.leaderSnapshotPath())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3*int(snapshotChunkBytes) {
		t.Fatalf("the snapshot has %d bytes, too few for several chunks of %d", len(want), snapshotChunkBytes)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("saved %d bytes differ from the leader's %d-byte snapshot %s", len(got), len(want), s.id)
	}
	info, err := verifyBackup(file, s.id)
	if err != nil {
		t.Fatal(err)
	}
	wantLine := fmt.Sprintf("Snapshot %s in %s: %d bytes, %d records, last contained log timestamp %d (",
		snapshotIDText(s.id), file, len(want), info.records, info.header.LastContainedLogTimestamp)
	if !strings.HasPrefix(r.stdout, wantLine) || info.records == 0 || info.header.LastContainedLogTimestamp <= 0 {
		t.Errorf("save printed %q, want it to start with %q", r.stdout, wantLine)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files after save, want only the backup", len(entries))
	}

	mustFail(t, file+" exists; give --force to replace it", save()...)
	writeFile(t, file, []byte("old"))
	mustSucceed(t, save("--force")...)
	if got, _ := os.ReadFile(file); !bytes.Equal(got, want) {
		t.Error("save --force did not replace the file with the snapshot")
	}

	// The leader serves a damaged snapshot: save refuses it and leaves no
	// file behind.
	for name, data := range damagedCopies(t, want) {
		t.Run(name, func(t *testing.T) {
			writeFile(t, s.leaderSnapshotPath(), data)
			out := filepath.Join(t.TempDir(), "damaged.checkpoint")
			mustFail(t, "the copy of snapshot "+snapshotIDText(s.id)+" does not verify",
				"metadata-quorum", "--bootstrap-controller", s.addr(s.leader), "snapshot", "save", out)
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
				t.Errorf("a refused save left %d files", len(entries))
			}
		})
	}

	// The snapshot the leader names is gone: save asks again for the
	// newest one until --timeout, and says why.
	if err := os.Remove(s.leaderSnapshotPath()); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "snapshot "+snapshotIDText(s.id)+" was deleted during the copy", "metadata-quorum", "--bootstrap-controller", s.addr(s.leader),
		"--timeout", "500ms", "snapshot", "save", filepath.Join(t.TempDir(), "gone.checkpoint"))
	writeFile(t, s.leaderSnapshotPath(), want)
}

func TestSnapshotSaveWithoutSnapshot(t *testing.T) {
	q := newQuorumNodes(t, 1)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", q.nodes[0].props)
	q.start(t)
	submitTopics(t, q.ctls[0], 0, 1)
	mustFail(t, "holds no snapshot yet", "metadata-quorum", "--bootstrap-controller", q.addr(0), "snapshot", "save", filepath.Join(t.TempDir(), "f"))
}
