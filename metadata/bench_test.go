package metadata_test

import (
	"testing"

	"github.com/krabka-go/krabka/metadata"
)

func id(b byte) [16]byte {
	var u [16]byte
	for i := range u {
		u[i] = b ^ byte(i*37)
	}
	return u
}

func ptr(s string) *string { return &s }

// realisticRecords returns one record of every type with values of the
// size a production cluster writes, at the newest version.
func realisticRecords() []metadata.Record {
	features := []metadata.RegisterBrokerRecordBrokerFeature{
		{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: 29},
		{Name: "kraft.version", MinSupportedVersion: 0, MaxSupportedVersion: 1},
		{Name: "group.version", MinSupportedVersion: 0, MaxSupportedVersion: 1},
		{Name: "transaction.version", MinSupportedVersion: 0, MaxSupportedVersion: 2},
	}
	recs := []metadata.Record{
		&metadata.RegisterBrokerRecord{Version: 4, BrokerId: 3, IncarnationId: id(1), BrokerEpoch: 123456,
			EndPoints: []metadata.RegisterBrokerRecordBrokerEndpoint{
				{Name: "PLAINTEXT", Host: "broker-3.kafka.svc.cluster.local", Port: 9092, SecurityProtocol: 0},
				{Name: "SSL", Host: "broker-3.kafka.svc.cluster.local", Port: 9093, SecurityProtocol: 1}},
			Features: features, Rack: ptr("eu-west-1a"), Fenced: true, LogDirs: [][16]byte{id(2), id(3)}},
		&metadata.UnregisterBrokerRecord{BrokerId: 3, BrokerEpoch: 123456},
		&metadata.TopicRecord{Name: "orders.v1.eu-west", TopicId: id(4)},
		&metadata.PartitionRecord{Version: 2, PartitionId: 17, TopicId: id(4), Replicas: []int32{1, 2, 3}, Isr: []int32{1, 2, 3},
			Leader: 1, LeaderEpoch: 12, PartitionEpoch: 40, Directories: [][16]byte{id(5), id(6), id(7)}},
		&metadata.ConfigRecord{ResourceType: 2, ResourceName: "orders.v1.eu-west", Name: "retention.ms", Value: ptr("604800000")},
		&metadata.PartitionChangeRecord{Version: 2, PartitionId: 17, TopicId: id(4), Isr: []int32{1, 3}, Leader: 3, LeaderRecoveryState: -1},
		&metadata.FenceBrokerRecord{Id: 3, Epoch: 123456},
		&metadata.UnfenceBrokerRecord{Id: 3, Epoch: 123456},
		&metadata.RemoveTopicRecord{TopicId: id(4)},
		&metadata.DelegationTokenRecord{Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"},
			IssueTimestamp: 1700000000000, MaxTimestamp: 1700604800000, ExpirationTimestamp: 1700086400000, TokenId: "8d4f2c1a-token"},
		&metadata.UserScramCredentialRecord{Name: "alice", Mechanism: 2, Salt: make([]byte, 32), StoredKey: make([]byte, 64),
			ServerKey: make([]byte, 64), Iterations: 8192},
		&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 29},
		&metadata.ClientQuotaRecord{Entity: []metadata.ClientQuotaRecordEntityData{{EntityType: "user", EntityName: ptr("alice")},
			{EntityType: "client-id", EntityName: ptr("billing-service")}}, Key: "producer_byte_rate", Value: 1048576},
		&metadata.ProducerIdsRecord{BrokerId: 1, BrokerEpoch: 123456, NextProducerId: 5000},
		&metadata.BrokerRegistrationChangeRecord{Version: 3, BrokerId: 3, BrokerEpoch: 123456, Fenced: -1, InControlledShutdown: 0},
		&metadata.AccessControlEntryRecord{Id: id(8), ResourceType: 2, ResourceName: "orders.", PatternType: 4,
			Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3},
		&metadata.RemoveAccessControlEntryRecord{Id: id(8)},
		&metadata.NoOpRecord{},
		&metadata.ZkMigrationStateRecord{ZkMigrationState: 0},
		&metadata.RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 2},
		&metadata.BeginTransactionRecord{Name: ptr("Bootstrap records")},
		&metadata.EndTransactionRecord{},
		&metadata.AbortTransactionRecord{Reason: ptr("controller failover")},
		&metadata.RemoveDelegationTokenRecord{TokenId: "8d4f2c1a-token"},
		&metadata.RegisterControllerRecord{ControllerId: 1, IncarnationId: id(9),
			EndPoints: []metadata.RegisterControllerRecordControllerEndpoint{{Name: "CONTROLLER", Host: "controller-1.kafka.svc.cluster.local", Port: 9093}},
			Features:  []metadata.RegisterControllerRecordControllerFeature{{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: 29}, {Name: "kraft.version", MaxSupportedVersion: 1}}},
		&metadata.ClearElrRecord{TopicName: "orders.v1.eu-west"},
	}
	return recs
}

func TestRealisticRecordsCoverEveryType(t *testing.T) {
	seen := map[metadata.APIKey]bool{}
	for _, r := range realisticRecords() {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatalf("%T: %v", r, err)
		}
		if _, err := metadata.Decode(b); err != nil {
			t.Fatalf("%T: %v", r, err)
		}
		seen[r.APIKey()] = true
	}
	for _, k := range metadata.APIKeys() {
		if !seen[k] {
			t.Errorf("no realistic %s", k)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, r := range realisticRecords() {
		enc, err := metadata.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(r.APIKey().String(), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := metadata.Decode(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, r := range realisticRecords() {
		enc, err := metadata.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(r.APIKey().String(), func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			buf := make([]byte, 0, 1024)
			for b.Loop() {
				var err error
				if buf, err = metadata.AppendRecord(buf[:0], r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
