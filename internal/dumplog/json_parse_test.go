package dumplog

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
)

// samplePayloads returns the distinct payloads of every data record of the
// Kafka samples, as the dump prints them.
func samplePayloads(t testing.TB) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	root := sharedtest.Dir(t, "kafka-samples")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".log") && !strings.HasSuffix(path, ".checkpoint")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var dump bytes.Buffer
		if _, err := Dump(&dump, path, data, Options{MetadataDecoder: true}); err != nil {
			return err
		}
		for _, line := range strings.Split(dump.String(), "\n") {
			if _, p, ok := strings.Cut(line, " payload: "); ok && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParsePayloadRoundTripsSamples parses every payload of the Kafka
// samples and checks that the record prints back to the same text.
func TestParsePayloadRoundTripsSamples(t *testing.T) {
	payloads := samplePayloads(t)
	if len(payloads) < 100 {
		t.Fatalf("only %d distinct payloads", len(payloads))
	}
	types := map[string]bool{}
	for _, p := range payloads {
		rec, err := ParsePayload([]byte(p))
		if err != nil {
			t.Fatalf("ParsePayload(%s): %v", p, err)
		}
		types[RecordTypeName(rec)] = true
		back, err := AppendPayload(nil, rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(back) != p {
			t.Fatalf("round trip:\n got %s\nwant %s", back, p)
		}
	}
	for _, want := range []string{"TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD", "CONFIG_RECORD", "FEATURE_LEVEL_RECORD", "PARTITION_CHANGE_RECORD"} {
		if !types[want] {
			t.Errorf("no %s among the samples' payloads", want)
		}
	}
}

// TestParsePayloadConventions parses the forms TestPayloadJSONConventions
// pins: tagged fields left out, null strings, bytes, doubles, uuids.
func TestParsePayloadConventions(t *testing.T) {
	for _, p := range []string{
		`{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":3,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","leader":1}}`,
		`{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":-1,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","isr":[]}}`,
		`{"type":"PARTITION_RECORD","version":1,"data":{"partitionId":-1,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","replicas":[1,2],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":-1,"partitionEpoch":-1,"directories":["AAAAAAAAAAAAAAAAAAAAAA","AAAAAAAAAAAAAAAAAAAAAQ"]}}`,
		`{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"alice","mechanism":1,"salt":"+/8=","storedKey":"aw==","serverKey":"","iterations":4096}}`,
		`{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null},{"entityType":"client-id","entityName":"c\"1\n"}],"key":"producer_byte_rate","value":1.0E7,"remove":false}}`,
		`{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"t<&>","name":"cleanup.policy","value":null}}`,
	} {
		rec, err := ParsePayload([]byte(p))
		if err != nil {
			t.Fatalf("ParsePayload(%s): %v", p, err)
		}
		if back := payload(t, rec); back != p {
			t.Errorf("round trip:\n got %s\nwant %s", back, p)
		}
	}
	// White space and key order do not matter.
	rec, err := ParsePayload([]byte(` { "data" : {"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAg"}, "version":0, "type":"TOPIC_RECORD" } `))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := payload(t, rec), `{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAg"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParsePayloadRefuses(t *testing.T) {
	const topic = `"topicId":"AAAAAAAAAAAAAAAAAAAAAg"`
	for _, tc := range []struct{ in, want string }{
		{``, "record JSON"},
		{`[]`, "record JSON"},
		{`null`, "want an object"},
		{`{"type":"TOPIC_RECORD","version":0,"data":{"name":"t",` + topic + `}} x`, "data after the JSON value"},
		{`{"type":"TOPIC_RECORD","data":{}}`, `missing key "version"`},
		{`{"version":0,"data":{}}`, `missing key "type"`},
		{`{"type":"TOPIC_RECORD","version":0}`, `missing key "data"`},
		{`{"type":"TOPIC_RECORD","version":0,"data":{},"x":1}`, `unknown key "x"`},
		{`{"type":"NO_SUCH_RECORD","version":0,"data":{}}`, `unknown record type "NO_SUCH_RECORD"`},
		{`{"type":"TOPIC_RECORD","version":7,"data":{}}`, "version 7 is not in 0 to 0"},
		{`{"type":"TOPIC_RECORD","version":"0","data":{}}`, "version"},
		{`{"type":"TOPIC_RECORD","version":0,"data":[]}`, "want an object"},
		{`{"type":"TOPIC_RECORD","version":0,"data":{"name":"t"}}`, `missing field "topicId", which is mandatory in version 0`},
		{`{"type":"TOPIC_RECORD","version":0,"data":{"name":"t",` + topic + `,"extra":1}}`, `unknown field "extra"`},
		{`{"type":"TOPIC_RECORD","version":0,"data":{"name":null,` + topic + `}}`, "name: null in a field that is not nullable"},
		{`{"type":"TOPIC_RECORD","version":0,"data":{"name":1,` + topic + `}}`, "name: want a string"},
		{`{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"short"}}`, `topicId: "short" is not a uuid`},
		{`{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":2147483648,` + topic + `,"replicas":[],"isr":[],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0}}`, "partitionId: 2147483648 is not an integer of 32 bits"},
		{`{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":"1",` + topic + `,"replicas":[],"isr":[],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0}}`, "partitionId: want a number"},
		{`{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":1.5,` + topic + `,"replicas":[],"isr":[],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0}}`, "partitionId: 1.5 is not an integer"},
		{`{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":1,` + topic + `,"replicas":["a"],"isr":[],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0}}`, "replicas: [0]: want a number"},
		{`{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":1,` + topic + `,"replicas":[],"isr":[],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0,"directories":[]}}`, `field "directories" is not in version 0`},
		{`{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"a","mechanism":1,"salt":"!","storedKey":"","serverKey":"","iterations":1}}`, `salt: "!" is not base64`},
		{`{"type":"REGISTER_BROKER_RECORD","version":0,"data":{"brokerId":1,"incarnationId":"AAAAAAAAAAAAAAAAAAAAAg","brokerEpoch":0,"endPoints":[{"name":"P","host":"h","port":70000,"securityProtocol":0}],"features":[],"rack":null}}`, "port: 70000 is not an unsigned integer of 16 bits"},
	} {
		_, err := ParsePayload([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePayload(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParsePayload(f *testing.F) {
	f.Add(`{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAg"}}`)
	f.Add(`{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null}],"key":"k","value":1.5,"remove":false}}`)
	f.Add(`{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":-1,"topicId":"AAAAAAAAAAAAAAAAAAAAAg","isr":[]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		rec, err := ParsePayload([]byte(in))
		if err != nil {
			return
		}
		// What parses prints to a form that parses to the same record.
		out, err := AppendPayload(nil, rec)
		if err != nil {
			return
		}
		again, err := ParsePayload(out)
		if err != nil {
			t.Fatalf("ParsePayload(AppendPayload(%s)) = %v", in, err)
		}
		if out2, _ := AppendPayload(nil, again); !bytes.Equal(out, out2) {
			t.Fatalf("not stable: %s then %s", out, out2)
		}
	})
}
