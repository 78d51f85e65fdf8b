package metadata_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/krabka-go/krabka/metadata"
)

// everyRecordTypeImage holds one or more records of every type a
// snapshot writes: brokers and controllers with different numbers of
// endpoints (a reused record must not keep the previous one's), topics,
// configs with different values, a quota of two entity components and one
// of one, the producer ids, an ACL, a SCRAM credential and a token.
func everyRecordTypeImage(t *testing.T) *metadata.Image {
	t.Helper()
	base := buildImage(t, 3, 2)
	d := metadata.NewDelta(base)
	off := base.Offset() + 1
	replay := func(r metadata.Record) {
		t.Helper()
		if err := d.Replay(r, off, 1); err != nil {
			t.Fatalf("replay %s: %v", r.APIKey(), err)
		}
		off++
	}
	for b := int32(4); b <= 5; b++ {
		r := metadata.NewRegisterBrokerRecord()
		r.Version = 3
		r.BrokerId, r.BrokerEpoch, r.IncarnationId = b, off, testUUID(uint64(b))
		for e := range 7 - b {
			r.EndPoints = append(r.EndPoints, metadata.RegisterBrokerRecordBrokerEndpoint{Name: fmt.Sprintf("L%d", e), Host: fmt.Sprintf("b%d", b), Port: 9092 + uint16(e)})
		}
		r.Features = []metadata.RegisterBrokerRecordBrokerFeature{{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: 29}}
		r.Rack = ptr(fmt.Sprintf("rack-%d", b))
		replay(r)
	}
	for c := int32(7); c <= 8; c++ {
		r := metadata.NewRegisterControllerRecord()
		r.ControllerId, r.IncarnationId = c, testUUID(uint64(100+c))
		for e := range 9 - c {
			r.EndPoints = append(r.EndPoints, metadata.RegisterControllerRecordControllerEndpoint{Name: fmt.Sprintf("C%d", e), Host: "c", Port: 9093 + uint16(e)})
		}
		r.Features = []metadata.RegisterControllerRecordControllerFeature{{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: 7, MaxSupportedVersion: 29}}
		replay(r)
	}
	for i := range 3 {
		c := metadata.NewConfigRecord()
		c.ResourceType, c.ResourceName, c.Name, c.Value = metadata.ConfigResourceTopic, fmt.Sprintf("topic-%07d", i), "retention.ms", ptr(fmt.Sprintf("%d", 1000+i))
		replay(c)
	}
	q := metadata.NewClientQuotaRecord()
	q.Entity = []metadata.ClientQuotaRecordEntityData{{EntityType: "user", EntityName: ptr("alice")}, {EntityType: "client-id", EntityName: ptr("app")}}
	q.Key, q.Value = "producer_byte_rate", 1024
	replay(q)
	q = metadata.NewClientQuotaRecord()
	q.Entity = []metadata.ClientQuotaRecordEntityData{{EntityType: "user", EntityName: ptr("bob")}}
	q.Key, q.Value = "consumer_byte_rate", 2048
	replay(q)
	p := metadata.NewProducerIdsRecord()
	p.BrokerId, p.BrokerEpoch, p.NextProducerId = 1, 1, 5000
	replay(p)
	a := metadata.NewAccessControlEntryRecord()
	a.Id, a.ResourceType, a.ResourceName, a.PatternType = testUUID(900), 2, "topic-0", 3
	a.Principal, a.Host, a.Operation, a.PermissionType = "User:alice", "*", 3, 3
	replay(a)
	s := metadata.NewUserScramCredentialRecord()
	s.Name, s.Mechanism, s.Iterations = "alice", 1, 4096
	s.Salt, s.StoredKey, s.ServerKey = []byte("salt"), bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	replay(s)
	tok := metadata.NewDelegationTokenRecord()
	tok.TokenId, tok.Owner, tok.Requester = "token-1", "User:alice", "User:alice"
	tok.IssueTimestamp, tok.MaxTimestamp, tok.ExpirationTimestamp = 1, 3, 2
	replay(tok)
	return d.Apply()
}

// TestAppendSnapshotRecordsEveryType: AppendSnapshotRecords writes, for
// every record type of a snapshot, the bytes SnapshotRecords' records
// encode to, in the same order (snapshotValues checks both).
func TestAppendSnapshotRecordsEveryType(t *testing.T) {
	img := everyRecordTypeImage(t)
	seen := map[metadata.APIKey]int{}
	for r := range img.SnapshotRecords() {
		seen[r.APIKey()]++
	}
	for _, k := range []metadata.APIKey{
		metadata.APIKeyFeatureLevelRecord, metadata.APIKeyRegisterBrokerRecord, metadata.APIKeyRegisterControllerRecord,
		metadata.APIKeyTopicRecord, metadata.APIKeyPartitionRecord, metadata.APIKeyConfigRecord,
		metadata.APIKeyClientQuotaRecord, metadata.APIKeyProducerIdsRecord, metadata.APIKeyAccessControlEntryRecord,
		metadata.APIKeyUserScramCredentialRecord, metadata.APIKeyDelegationTokenRecord,
	} {
		if seen[k] == 0 {
			t.Errorf("the image's snapshot holds no %s", k)
		}
	}
	if n := len(snapshotValues(t, img)); n == 0 {
		t.Fatal("no snapshot records")
	}
}

// TestAppendSnapshotRecordsStops: the first error of emit stops the
// walk and is returned.
func TestAppendSnapshotRecordsStops(t *testing.T) {
	img := everyRecordTypeImage(t)
	stop := fmt.Errorf("stop")
	calls := 0
	err := img.AppendSnapshotRecords(func([]byte) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Fatalf("AppendSnapshotRecords = %v after %d calls, want stop after 3", err, calls)
	}
}

// TestAppendSnapshotRecordsAllocations: encoding a snapshot allocates a
// fixed number of objects, not some per record: 200 topics of ten
// partitions (over 2,200 records) allocate at most a few objects more
// than 2 topics do (a longer record may grow the buffer once more).
func TestAppendSnapshotRecordsAllocations(t *testing.T) {
	allocs := func(img *metadata.Image) float64 {
		return testing.AllocsPerRun(5, func() {
			if err := img.AppendSnapshotRecords(func([]byte) error { return nil }); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(buildImage(t, 2, 10)), allocs(buildImage(t, 200, 10))
	if large > small+4 || large > 16 {
		t.Fatalf("AppendSnapshotRecords allocated %.0f objects for 2 topics, %.0f for 200 (want at most 16, and at most 4 more for 200)", small, large)
	}
}
