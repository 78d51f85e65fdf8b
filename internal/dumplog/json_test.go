package dumplog

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

func payload(t *testing.T, rec metadata.Record) string {
	t.Helper()
	b, err := AppendPayload(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON %s", b)
	}
	return string(b)
}

func TestPayloadJSONConventions(t *testing.T) {
	topic := [16]byte{15: 2}
	str := func(s string) *string { return &s }

	pc := metadata.NewPartitionChangeRecord()
	pc.PartitionId, pc.TopicId, pc.Leader = 3, topic, 1
	pcIsr := metadata.NewPartitionChangeRecord()
	pcIsr.Version, pcIsr.TopicId, pcIsr.Isr = 2, topic, []int32{}

	pr := metadata.NewPartitionRecord()
	pr.TopicId, pr.Replicas, pr.Isr, pr.Leader = topic, []int32{1, 2}, []int32{1}, 1
	pr1 := *pr
	pr1.Version, pr1.Directories = 1, [][16]byte{{}, {15: 1}}

	scram := metadata.NewUserScramCredentialRecord()
	scram.Name, scram.Mechanism, scram.Salt, scram.StoredKey, scram.ServerKey, scram.Iterations = "alice", 1, []byte{0xfb, 0xff}, []byte("k"), []byte{}, 4096

	quota := metadata.NewClientQuotaRecord()
	quota.Entity = []metadata.ClientQuotaRecordEntityData{{EntityType: "user", EntityName: nil}, {EntityType: "client-id", EntityName: str("c\"1\n")}}
	quota.Key, quota.Value = "producer_byte_rate", 1e7

	cfg := metadata.NewConfigRecord()
	cfg.ResourceType, cfg.ResourceName, cfg.Name, cfg.Value = 2, "t<&>", "cleanup.policy", nil

	for _, tc := range []struct {
		name string
		rec  metadata.Record
		want string
	}{
		{"tagged fields only when not default", pc,
			`{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":3,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","leader":1}}`},
		{"an empty list differs from the null default", pcIsr,
			`{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":-1,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","isr":[]}}`},
		// leaderRecoveryState is tagged with default 0, so it is left out.
		{"fields of later versions are left out", pr,
			`{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":-1,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","replicas":[1,2],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":-1,"partitionEpoch":-1}}`},
		{"uuid arrays", &pr1,
			`{"type":"PARTITION_RECORD","version":1,"data":{"partitionId":-1,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","replicas":[1,2],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":-1,"partitionEpoch":-1,"directories":["AAAAAAAAAAAAAAAAAAAAAA","AAAAAAAAAAAAAAAAAAAAAQ"]}}`},
		{"bytes are standard base64", scram,
			`{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"alice","mechanism":1,"salt":"+/8=","storedKey":"aw==","serverKey":"","iterations":4096}}`},
		{"doubles as Java prints them, null strings, escapes", quota,
			`{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null},{"entityType":"client-id","entityName":"c\"1\n"}],"key":"producer_byte_rate","value":1.0E7,"remove":false}}`},
		{"no HTML escaping, null value", cfg,
			`{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"t<&>","name":"cleanup.policy","value":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := payload(t, tc.rec); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAppendDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", 1048576: "1048576.0", 1.5: "1.5", 1e7: "1.0E7", 12345678.9: "1.23456789E7",
		0.001: "0.001", 0.0001: "1.0E-4", -2.5: "-2.5",
	} {
		if got := string(appendDouble(nil, f)); got != want {
			t.Errorf("appendDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestRecordTypeNames(t *testing.T) {
	want := map[metadata.APIKey]string{
		metadata.APIKeyRegisterBrokerRecord:            "REGISTER_BROKER_RECORD",
		metadata.APIKeyZkMigrationStateRecord:          "ZK_MIGRATION_STATE_RECORD",
		metadata.APIKeyNoOpRecord:                      "NO_OP_RECORD",
		metadata.APIKeyClearElrRecord:                  "CLEAR_ELR_RECORD",
		metadata.APIKeyBrokerRegistrationChangeRecord:  "BROKER_REGISTRATION_CHANGE_RECORD",
		metadata.APIKeyRemoveUserScramCredentialRecord: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
		metadata.APIKeyRegisterControllerRecord:        "REGISTER_CONTROLLER_RECORD",
		metadata.APIKeyRemoveAccessControlEntryRecord:  "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
	}
	for k, name := range want {
		if got := RecordTypeName(metadata.NewRecord(k)); got != name {
			t.Errorf("api key %d: %s, want %s", k, got, name)
		}
	}
	// Every record type has a schema and prints at every version.
	for _, k := range metadata.APIKeys() {
		rec := metadata.NewRecord(k)
		for v := rec.MinVersion(); v <= rec.MaxVersion(); v++ {
			rec.SetVersion(v)
			payload(t, rec)
		}
	}
	for _, msg := range []control.Message{&control.LeaderChangeMessage{}, &control.SnapshotHeaderRecord{}, &control.SnapshotFooterRecord{}, &control.KRaftVersionRecord{}, &control.VotersRecord{}} {
		b, err := AppendControlJSON(nil, msg)
		if err != nil || !json.Valid(b) {
			t.Errorf("%T: %s, %v", msg, b, err)
		}
	}
	if _, err := appendMessageJSON(nil, 3, 0); err == nil {
		t.Error("a non-struct was accepted")
	}
}

// TestDumpSamplesSummary dumps every segment and checkpoint of the
// samples and checks that each payload is valid JSON and nothing is
// counted as damaged.
func TestDumpSamplesSummary(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".log") && !strings.HasSuffix(path, ".checkpoint")) {
			return err
		}
		n++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		sum, err := Dump(&out, path, data, Options{MetadataDecoder: true})
		if err != nil {
			return err
		}
		if sum.Batches == 0 || sum.InvalidBatches != 0 || sum.Errors != 0 || sum.InvalidTrailingBytes != 0 {
			t.Errorf("%s: %+v", path, sum)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if _, p, ok := strings.Cut(line, " payload: "); ok && !json.Valid([]byte(p)) {
				t.Errorf("%s: invalid JSON payload %s", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d sample files", n)
	}
}
