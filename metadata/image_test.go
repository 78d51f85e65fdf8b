package metadata_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/metadata"
)

// replayLines replays record lines (the datadriven syntax) from offset 1
// and fails the test on a rejection.
func replayLines(t *testing.T, lines ...string) *metadata.Delta {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	for i, l := range lines {
		rec, err := parseRecord(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Replay(rec, int64(i+1), 1); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestReplayErrorMatchesItsKind(t *testing.T) {
	d := replayLines(t, "feature name=metadata.version level=21")
	rec, _ := parseRecord("remove-topic id=100")
	err := d.Replay(rec, 7, 1)
	var re *metadata.ReplayError
	if !errors.As(err, &re) {
		t.Fatalf("Replay = %v, want a *ReplayError", err)
	}
	if re.APIKey != metadata.APIKeyRemoveTopicRecord || re.Offset != 7 || re.Kind != metadata.ErrNotFound {
		t.Errorf("ReplayError = %+v", re)
	}
	if !errors.Is(err, metadata.ErrNotFound) || errors.Is(err, metadata.ErrInvalidRecord) {
		t.Errorf("errors.Is does not follow the kind: %v", err)
	}
	if want := "metadata: replay RemoveTopicRecord at offset 7: no topic with id"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Error() = %q, want prefix %q", err, want)
	}
	if d.Offset() != 1 {
		t.Errorf("rejected record moved the offset to %d", d.Offset())
	}
	if err := d.Replay(nil, 8, 1); !errors.Is(err, metadata.ErrInvalidRecord) || !strings.Contains(err.Error(), "APIKey(-1)") {
		t.Errorf("Replay(nil) = %v", err)
	}
}

func TestImageAccessors(t *testing.T) {
	img := replayLines(t,
		"feature name=metadata.version level=21",
		"feature name=group.version level=1",
		"broker id=1 epoch=2 rack=r1 features=metadata.version:7-21,group.version:0-1",
		"controller id=3000 features=metadata.version:7-21,group.version:0-1",
		"topic name=orders id=100",
		"partition topic=100 id=0 replicas=1",
		"partition topic=100 id=1 replicas=1",
		"config type=2 name=orders key=retention.ms value=5",
		"quota user=alice client-id=app key=producer_byte_rate value=7",
		"producer-ids broker=1 epoch=2 next=3000",
		"acl id=11 resource=orders",
		"scram name=alice mech=2",
		"token id=t1 owner=User:alice",
	).Apply()
	if img.Offset() != 13 || img.Epoch() != 1 {
		t.Errorf("provenance %d/%d, want 13/1", img.Offset(), img.Epoch())
	}
	f := img.Features()
	if f.Level(metadata.FeatureMetadataVersion) != 21 || f.Level("group.version") != 1 || f.Level("other") != 0 || f.ZkMigrationState() != 0 {
		t.Errorf("features: %d %d %d", f.Level(metadata.FeatureMetadataVersion), f.Level("group.version"), f.Level("other"))
	}
	c := img.Cluster()
	if b, ok := c.Broker(1); !ok || *b.Rack != "r1" || b.Epoch != 2 || c.NumBrokers() != 1 {
		t.Errorf("Broker(1) = %+v, %v", b, ok)
	}
	if _, ok := c.Broker(2); ok {
		t.Error("Broker(2) found")
	}
	if ct, ok := c.Controller(3000); !ok || ct.ID != 3000 || c.NumControllers() != 1 {
		t.Errorf("Controller(3000) = %+v, %v", ct, ok)
	}
	topic, ok := img.Topics().ByName("orders")
	if !ok || topic.NumPartitions() != 2 || img.Topics().Len() != 1 || img.Topics().NumPartitions() != 2 {
		t.Fatalf("ByName(orders) = %+v, %v", topic, ok)
	}
	if byID, _ := img.Topics().ByID(topic.ID); byID != topic {
		t.Error("ByID and ByName disagree")
	}
	if p, ok := topic.Partition(1); !ok || p.Leader != 1 {
		t.Errorf("Partition(1) = %+v, %v", p, ok)
	}
	if _, ok := topic.Partition(2); ok {
		t.Error("Partition(2) found")
	}
	n := 0
	for range img.Topics().All() {
		n++
	}
	if n != 1 {
		t.Errorf("All yields %d topics", n)
	}
	if v, ok := img.Configs().Get(metadata.ConfigResource{Type: metadata.ConfigResourceTopic, Name: "orders"}, "retention.ms"); !ok || v != "5" || img.Configs().Len() != 1 {
		t.Errorf("config = %q, %v", v, ok)
	}
	if _, ok := img.Configs().Get(metadata.ConfigResource{Type: metadata.ConfigResourceTopic, Name: "x"}, "retention.ms"); ok {
		t.Error("config of an unknown resource found")
	}
	alice, app := "alice", "app"
	q, ok := img.ClientQuotas().Get([]metadata.QuotaEntityPart{{Type: metadata.QuotaEntityUser, Name: &alice}, {Type: metadata.QuotaEntityClientID, Name: &app}})
	if !ok || img.ClientQuotas().Len() != 1 {
		t.Fatal("quota not found with the entity in another order")
	}
	if v, ok := q.Value("producer_byte_rate"); !ok || v != 7 {
		t.Errorf("quota value = %v, %v", v, ok)
	}
	if img.ProducerIDs().NextProducerID() != 3000 {
		t.Errorf("next producer id %d", img.ProducerIDs().NextProducerID())
	}
	if a, ok := img.ACLs().Get(testUUID(11)); !ok || a.ResourceName != "orders" || img.ACLs().Len() != 1 {
		t.Errorf("ACL = %+v, %v", a, ok)
	}
	if s, ok := img.Scram().Get(metadata.ScramSHA512, "alice"); !ok || s.Iterations != 4096 || img.Scram().Len() != 1 {
		t.Errorf("SCRAM = %+v, %v", s, ok)
	}
	if _, ok := img.Scram().Get(metadata.ScramSHA256, "alice"); ok {
		t.Error("SCRAM-SHA-256 credential found")
	}
	if tk, ok := img.DelegationTokens().Get("t1"); !ok || tk.Owner != "User:alice" || img.DelegationTokens().Len() != 1 {
		t.Errorf("token = %+v, %v", tk, ok)
	}
}

// TestRejectionChangesNothing: whatever random record is rejected, the
// delta's image and offset stay as they were. Checked twice: publishing
// before every record, and, since a delta changes its own nodes in place
// between publications, by comparing a delta that saw the rejected
// records with one that saw only the accepted ones.
func TestRejectionChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		all, accepted := metadata.NewDelta(metadata.EmptyImage()), metadata.NewDelta(metadata.EmptyImage())
		for i, r := range recs {
			if all.Replay(r, int64(i), 1) == nil {
				if err := accepted.Replay(r, int64(i), 1); err != nil {
					t.Fatalf("record %d accepted once, then rejected: %v", i, err)
				}
			}
		}
		if err := imagesEqual(t, all.Apply(), accepted.Apply()); err != nil {
			t.Fatal(err)
		}
		d := metadata.NewDelta(metadata.EmptyImage())
		for i, r := range recs {
			before, off, txn := printImage(d.Apply()), d.Offset(), d.InTransaction()
			if err := d.Replay(r, int64(i), 1); err != nil {
				if got := printImage(d.Apply()); got != before || d.Offset() != off || d.InTransaction() != txn {
					t.Fatalf("rejected %s (%v) changed the delta", r.APIKey(), err)
				}
			}
		}
	})
}

// TestLongListsAreChecked covers the map-based checks used for long
// lists (a client may send hundreds of thousands of ids in one record).
func TestLongListsAreChecked(t *testing.T) {
	d := replayLines(t, "feature name=metadata.version level=21", "topic name=big id=100")
	ids := make([]int32, 100000)
	for i := range ids {
		ids[i] = int32(i)
	}
	part := func(replicas, isr []int32) *metadata.PartitionRecord {
		r := metadata.NewPartitionRecord()
		r.TopicId, r.PartitionId, r.Replicas, r.Isr, r.Leader = testUUID(100), 0, replicas, isr, isr[0]
		r.LeaderEpoch, r.PartitionEpoch = 0, 0
		return r
	}
	withLeader := func(r *metadata.PartitionRecord, leader int32) *metadata.PartitionRecord {
		r.Leader = leader
		return r
	}
	dup := append(slices.Clone(ids), 77)
	for name, tc := range map[string]struct {
		rec  *metadata.PartitionRecord
		want string
	}{
		"duplicate replica":    {part(dup, ids[:1]), "broker 77 appears twice in replicas"},
		"isr outside replicas": {part(ids, append(slices.Clone(ids[1:]), 100000)), "broker 100000 in isr is not a replica"},
		"leader outside isr":   {withLeader(part(ids, ids[1:]), 0), "leader 0 is not in the isr"},
	} {
		if err := d.Replay(tc.rec, 10, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Replay = %v, want %q", name, err, tc.want)
		}
	}
	if err := d.Replay(part(ids, ids), 10, 1); err != nil {
		t.Fatalf("valid partition with %d replicas: %v", len(ids), err)
	}
}

// foreignRecord is a record type the image does not know.
type foreignRecord struct{ metadata.NoOpRecord }

func (*foreignRecord) APIKey() metadata.APIKey { return 99 }

func TestUnknownRecordTypeIsRejected(t *testing.T) {
	d := replayLines(t, "feature name=metadata.version level=21")
	err := d.Replay(&foreignRecord{}, 2, 1)
	if !errors.Is(err, metadata.ErrInvalidRecord) || !strings.Contains(err.Error(), "APIKey(99) cannot be replayed") {
		t.Errorf("Replay(foreign record) = %v", err)
	}
}

func TestSkipMovesOnlyTheOffset(t *testing.T) {
	d := replayLines(t, "feature name=metadata.version level=21", "topic name=a id=100")
	before := printImage(d.Apply())
	rec, _ := parseRecord("topic name=a id=101")
	if err := d.Replay(rec, 3, 2); err == nil {
		t.Fatal("duplicate topic accepted")
	}
	if err := d.Skip(3, 2); err != nil {
		t.Fatal(err)
	}
	img := d.Apply()
	if img.Offset() != 3 || img.Epoch() != 2 {
		t.Errorf("after Skip: offset %d epoch %d, want 3 and 2", img.Offset(), img.Epoch())
	}
	want := strings.Replace(before, "offset=2 epoch=1", "offset=3 epoch=2", 1)
	if got := printImage(img); got != want {
		t.Errorf("Skip changed the image:\n%s\nwant\n%s", got, want)
	}
	if err := d.Skip(2, 2); !errors.Is(err, metadata.ErrOffsetOrder) {
		t.Errorf("Skip backwards = %v", err)
	}
}

// TestChangedAtSkipsRecordsThatChangeNothing: ChangedAt is the offset of
// the last record that changed the image; NoOps, skipped records and an
// aborted transaction leave it, a snapshot's records move it to the
// snapshot's offset.
func TestChangedAtSkipsRecordsThatChangeNothing(t *testing.T) {
	mv := &metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 29}
	cfg := func(v string) metadata.Record {
		return &metadata.ConfigRecord{ResourceType: 4, ResourceName: "", Name: "min.insync.replicas", Value: &v}
	}
	d := metadata.NewDelta(metadata.EmptyImage())
	if got := d.Apply().ChangedAt(); got != -1 {
		t.Fatalf("empty image: ChangedAt %d, want -1", got)
	}
	steps := []struct {
		rec  metadata.Record // nil: Skip
		want int64
	}{
		{mv, 0},
		{metadata.NewNoOpRecord(), 0},
		{nil, 0}, // a record the replica skipped
		{cfg("2"), 3},
		{metadata.NewBeginTransactionRecord(), 3},
		{cfg("3"), 5},
		{metadata.NewAbortTransactionRecord(), 3},
		{metadata.NewBeginTransactionRecord(), 3},
		{cfg("3"), 8},
		{metadata.NewEndTransactionRecord(), 8},
		{metadata.NewNoOpRecord(), 8},
	}
	for i, s := range steps {
		var err error
		if s.rec == nil {
			err = d.Skip(int64(i), 1)
		} else {
			err = d.Replay(s.rec, int64(i), 1)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := d.ChangedAt(); got != s.want {
			t.Fatalf("step %d (%v): Delta.ChangedAt %d, want %d", i, s.rec, got, s.want)
		}
		if img := d.Apply(); !d.InTransaction() && img.ChangedAt() != s.want {
			t.Fatalf("step %d: Image.ChangedAt %d, want %d", i, img.ChangedAt(), s.want)
		}
	}
	snap := metadata.NewDelta(metadata.EmptyImage())
	if err := snap.ReplaySnapshot([]metadata.Record{mv, cfg("2")}, 41, 2); err != nil {
		t.Fatal(err)
	}
	if got := snap.Apply().ChangedAt(); got != 41 {
		t.Fatalf("snapshot image: ChangedAt %d, want 41", got)
	}
}
