package raft

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// referenceImage builds, without the runtime, the image a Kafka metadata
// directory holds: the snapshot named snap (none if empty), then every
// record of the segment file segment after it, replayed into a fresh
// delta; a record the image refuses fails the test, as it stops the
// engine.
func referenceImage(t *testing.T, dir, snap, segment string) *metadata.Image {
	t.Helper()
	delta := metadata.NewDelta(metadata.EmptyImage())
	next := int64(0)
	if snap != "" {
		r, err := snapshot.Open(vfs.OS(), filepath.Join(dir, snap), snapshot.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var recs []metadata.Record
		for r.Next() {
			b := r.Batch()
			for i := range b.Records {
				rec, err := metadata.Decode(b.Records[i].Value)
				if err != nil {
					t.Fatalf("snapshot %s: %v", snap, err)
				}
				recs = append(recs, rec)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		id := r.ID()
		if err := delta.ReplaySnapshot(recs, int64(id.Offset)-1, int32(id.Epoch)); err != nil {
			t.Fatalf("snapshot %s: %v", snap, err)
		}
		next = int64(id.Offset)
	}
	raw, err := os.ReadFile(filepath.Join(dir, segment))
	if err != nil {
		t.Fatal(err)
	}
	var dec recordbatch.Decoder
	it := recordbatch.NewIterator(&dec, raw)
	for it.Next() {
		b := it.Batch()
		if b.IsControl() {
			continue
		}
		for i := range b.Records {
			off := b.RecordOffset(&b.Records[i])
			if off < next {
				continue
			}
			rec, err := metadata.Decode(b.Records[i].Value)
			if err == nil {
				err = delta.Replay(rec, off, b.PartitionLeaderEpoch)
			}
			if err != nil {
				t.Fatalf("segment %s: the image refuses the record at offset %d: %v", segment, off, err)
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("segment %s: %v", segment, err)
	}
	return delta.Apply()
}

// imageBytes encodes every record of img's snapshot form: two images are
// equal exactly when these are.
func imageBytes(t *testing.T, img *metadata.Image) [][]byte {
	t.Helper()
	var out [][]byte
	for rec := range img.SnapshotRecords() {
		b, err := metadata.Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestStartOnKafkaDirectory: a controller started on a copy of a
// single-node Kafka metadata directory (node 1, the single static voter,
// the cluster id of its meta.properties) recovers the log and its latest
// snapshot, replays everything into an image equal to one built from the
// earliest snapshot and the whole log, becomes leader in a later epoch
// than Kafka's last and commits a new change on top.
func TestStartOnKafkaDirectory(t *testing.T) {
	for _, tc := range []struct {
		sample     string
		clusterID  string
		refSnap    string // the snapshot the reference image starts from
		segment    string
		lastOffset int64 // the last offset Kafka wrote
		lastEpoch  int32
		topics     []string // when known from the sample's README
		partitions int      // when known from the sample's README
	}{
		{
			sample: "kafka42-single-static", clusterID: "O8k6g0O7QDSqS56devRlew",
			segment: "00000000000000000000.log", lastOffset: 16955, lastEpoch: 3,
			topics: []string{"__consumer_offsets", "streaming-events"}, partitions: 53,
		},
		{
			// No snapshot; the log opens with a metadata transaction.
			sample: "kafka37-single-static", clusterID: "q1w2e3r4t5y6u7i8o9p0",
			segment: "00000000000000000000.log", lastOffset: 4928, lastEpoch: 1, partitions: 54,
		},
		{
			sample: "kafka39-single-logstart", clusterID: "MkU3OEVBNTcwNTJENDM2Qk",
			refSnap: "00000000000000128356-0000000020.checkpoint",
			segment: "00000000000000128356.log", lastOffset: 149994, lastEpoch: 21,
		},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			logDir := t.TempDir()
			if err := os.CopyFS(logDir, os.DirFS(filepath.Join(sharedtest.Dir(t, "kafka-samples"), tc.sample))); err != nil {
				t.Fatal(err)
			}
			partDir := filepath.Join(logDir, PartitionDirName)
			want := referenceImage(t, partDir, tc.refSnap, tc.segment)
			if tc.partitions > 0 && want.Topics().NumPartitions() != tc.partitions {
				t.Fatalf("the sample's log holds %d partitions, want %d", want.Topics().NumPartitions(), tc.partitions)
			}
			if tc.topics != nil {
				var names []string
				for name := range want.Topics().Names() {
					names = append(names, name)
				}
				if len(names) != len(tc.topics) || names[0] != tc.topics[0] || names[1] != tc.topics[1] || want.Topics().NumPartitions() != tc.partitions {
					t.Fatalf("the sample's log holds topics %v with %d partitions, want %v with %d", names, want.Topics().NumPartitions(), tc.topics, tc.partitions)
				}
			}

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			node, err := Start(ctx, ForTests(1, logDir))
			if err != nil {
				t.Fatal(err)
			}
			stop := func(node *Controller) {
				sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer scancel()
				if err := node.Shutdown(sctx); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			}
			defer func() { stop(node) }()
			if node.eng.clusterID != tc.clusterID {
				t.Errorf("cluster id %q, want %q from meta.properties", node.eng.clusterID, tc.clusterID)
			}
			waitFor(t, "leadership and the whole log applied", func() bool {
				st := node.QuorumState()
				return st.Role == RoleLeader && st.AppliedOffset > tc.lastOffset+1
			})
			st := node.QuorumState()
			if st.Epoch <= tc.lastEpoch || st.LeaderID != 1 {
				t.Errorf("leader %d in epoch %d, want node 1 in an epoch after Kafka's %d", st.LeaderID, st.Epoch, tc.lastEpoch)
			}
			got := node.CurrentImage()
			if got.Offset() != want.Offset() || got.Topics().Len() != want.Topics().Len() || got.Topics().NumPartitions() != want.Topics().NumPartitions() {
				t.Fatalf("image at offset %d with %d topics and %d partitions, want offset %d, %d and %d",
					got.Offset(), got.Topics().Len(), got.Topics().NumPartitions(), want.Offset(), want.Topics().Len(), want.Topics().NumPartitions())
			}
			t.Logf("leader in epoch %d; image at offset %d (epoch %d): %d topics, %d partitions, metadata.version %d",
				st.Epoch, got.Offset(), got.Epoch(), got.Topics().Len(), got.Topics().NumPartitions(), got.Features().MetadataVersion())
			gb, wb := imageBytes(t, got), imageBytes(t, want)
			if len(gb) != len(wb) {
				t.Fatalf("image has %d records, the reference %d", len(gb), len(wb))
			}
			for i := range gb {
				if !bytes.Equal(gb[i], wb[i]) {
					t.Fatalf("image record %d differs from the reference", i)
				}
			}

			res := submit(t, node, topicRecord("after-kafka"))
			if res.Offset <= tc.lastOffset || res.Epoch != st.Epoch {
				t.Errorf("new change at offset %d in epoch %d, want past %d in epoch %d", res.Offset, res.Epoch, tc.lastOffset, st.Epoch)
			}
			if _, ok := node.CurrentImage().Topics().ByName("after-kafka"); !ok || node.CurrentImage().Topics().Len() != want.Topics().Len()+1 {
				t.Errorf("the new topic is not in the image")
			}

			// Restarted, the node recovers Kafka's records and its own.
			stop(node)
			node, err = Start(ctx, ForTests(1, logDir))
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "leadership after a restart", func() bool {
				st := node.QuorumState()
				return st.Role == RoleLeader && st.AppliedOffset > res.LastOffset
			})
			if _, ok := node.CurrentImage().Topics().ByName("after-kafka"); !ok || node.QuorumState().Epoch <= st.Epoch {
				t.Errorf("after a restart: epoch %d, new topic present %v; want an epoch after %d and the topic", node.QuorumState().Epoch, ok, st.Epoch)
			}
		})
	}
}

// TestStartOnKafkaQuorum: three controllers started on copies of the three
// nodes of a Kafka 3.5 quorum (static voters 1, 2 and 3; node 1 holds one
// more batch than the others, the LeaderChange of epoch 190, and node 3 a
// different snapshot) elect a leader in a later epoch, agree on one image,
// equal to the one the whole log of node 2 replays into, and commit a new
// change on every node.
func TestStartOnKafkaQuorum(t *testing.T) {
	const lastOffset, lastEpoch = 30637, 190
	sample := filepath.Join(sharedtest.Dir(t, "kafka-samples"), "kafka35-3node-static")
	want := referenceImage(t, filepath.Join(sample, "kafka2", PartitionDirName), "", "00000000000000000000.log")
	c := newTestClusterWith(t, 3, "", func(cfg *Config) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(sample, fmt.Sprintf("kafka%d", cfg.NodeID)))); err != nil {
			t.Fatal(err)
		}
		cfg.MetadataLogDir = dir
	})
	leader := c.leader()
	if st := c.node(leader).QuorumState(); st.Epoch <= lastEpoch {
		t.Errorf("leader %d in epoch %d, want an epoch after Kafka's %d", leader, st.Epoch, lastEpoch)
	}
	c.waitApplied(lastOffset)
	wb := imageBytes(t, want)
	for id := NodeID(1); id <= 3; id++ {
		got := c.node(id).CurrentImage()
		if got.Offset() != want.Offset() {
			t.Fatalf("node %d: image at offset %d, want %d", id, got.Offset(), want.Offset())
		}
		gb := imageBytes(t, got)
		if len(gb) != len(wb) {
			t.Fatalf("node %d: image has %d records, the reference %d", id, len(gb), len(wb))
		}
		for i := range gb {
			if !bytes.Equal(gb[i], wb[i]) {
				t.Fatalf("node %d: image record %d differs from the reference", id, i)
			}
		}
	}
	res := c.submitRetrying(topicRecord("after-kafka"))
	c.waitApplied(res.LastOffset + 1)
	for id := NodeID(1); id <= 3; id++ {
		if _, ok := c.node(id).CurrentImage().Topics().ByName("after-kafka"); !ok {
			t.Errorf("node %d: the new topic is not in the image", id)
		}
	}
}

// TestStartOnDynamicKafkaDirectoryWithStaticVoters: the latest snapshot of
// a Kafka 4.1 directory formatted with --standalone holds kraft.version 1
// and its voter set. A node configured with controller.quorum.voters
// starts on it and counts votes against the snapshot's voter set, not the
// configured one, as Kafka does once a VotersRecord exists (and as a
// static quorum does after its kraft.version upgrade): it is that set's
// only voter and leads, and it reports kraft.version 1.
func TestStartOnDynamicKafkaDirectoryWithStaticVoters(t *testing.T) {
	logDir := t.TempDir()
	if err := os.CopyFS(logDir, os.DirFS(filepath.Join(sharedtest.Dir(t, "kafka-samples"), "kafka41-dynamic-bootstrap-nolog"))); err != nil {
		t.Fatal(err)
	}
	mp, err := logstore.ReadMetaProperties(vfs.OS(), logDir)
	if err != nil {
		t.Fatal(err)
	}
	node, err := Start(t.Context(), ForTests(1, logDir))
	if err != nil {
		t.Fatalf("Start on a kraft.version 1 directory with controller.quorum.voters: %v", err)
	}
	defer func() { _ = node.Shutdown(t.Context()) }()
	waitFor(t, "node 1 to lead", func() bool { return node.QuorumState().Role == RoleLeader })
	voters := node.eng.pub.voterList()
	if len(voters) != 1 || voters[0].id != 1 || voters[0].dir != [16]byte(mp.DirectoryID) {
		t.Errorf("voter set %+v, want the snapshot's: node 1 with directory id %s", voters, mp.DirectoryID)
	}
	if v := node.eng.pub.finalizedKRaftVersion(); v != 1 {
		t.Errorf("kraft.version %d, want 1", v)
	}
}
