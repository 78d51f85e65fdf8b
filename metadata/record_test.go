package metadata

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/kbin"
)

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		is   error
		as   func(error) bool
		msg  string
	}{
		{name: "empty", in: "", is: kbin.ErrTruncated, msg: "frame"},
		{name: "frame version 0", in: "00 14 00 00", is: ErrUnsupportedFrame, msg: "frame version 0"},
		{name: "frame version 2", in: "02 14 00 00", is: ErrUnsupportedFrame, msg: "frame version 2"},
		{name: "unknown api key 6", in: "01 06 00 00", as: func(err error) bool {
			var e *UnknownAPIKeyError
			return errors.As(err, &e) && e.APIKey == 6
		}, msg: "api key 6"},
		{name: "unknown api key 29", in: "01 1d 00 00", as: func(err error) bool {
			var e *UnknownAPIKeyError
			return errors.As(err, &e) && e.APIKey == 29
		}, msg: "api key 29"},
		{name: "unknown version", in: "01 14 01 00", as: func(err error) bool {
			var e *UnsupportedVersionError
			return errors.As(err, &e) && e.Version == 1 && e.Message == "NoOpRecord"
		}, msg: "NoOpRecord has no version 1"},
		{name: "huge version", in: "01 14 ff ff 03 00", msg: "version 65535"},
		{name: "trailing bytes", in: "01 14 00 00 00", is: kbin.ErrInvalid, msg: "trailing"},
		{name: "truncated topic name", in: `01 02 00 10 "abc"`, is: kbin.ErrTruncated, msg: "field Name"},
		{name: "non-minimal varint", in: "01 94 00 00 00", is: kbin.ErrInvalid, msg: "non-minimal"},
		{name: "tags out of order", in: "01 03 00 | 00000000 | 00000000000000000000000000000000 | 01 01 01 01 | ffffffff | 00000000 | 00000000 | 02 01 01 00 00 01 01",
			is: kbin.ErrInvalid, msg: "strictly ascending"},
		{name: "tagged field with its default", in: "01 03 00 | 00000000 | 00000000000000000000000000000000 | 01 01 01 01 | ffffffff | 00000000 | 00000000 | 01 00 01 00",
			is: kbin.ErrInvalid, msg: "LeaderRecoveryState"},
		{name: "tagged field size mismatch", in: "01 03 00 | 00000000 | 00000000000000000000000000000000 | 01 01 01 01 | ffffffff | 00000000 | 00000000 | 01 00 02 01 00",
			is: kbin.ErrInvalid, msg: "LeaderRecoveryState"},
		{name: "bool not 0 or 1", in: `01 0e 00 | 01 | 01 | 00000000 00000000 | 02 | 00`, is: kbin.ErrInvalid, msg: "bool"},
		{name: "huge array count", in: "01 03 00 | 00000000 | 00000000000000000000000000000000 | ff ff ff ff 0f", is: kbin.ErrTruncated, msg: "Replicas"},
		{name: "null non-nullable array", in: "01 03 00 | 00000000 | 00000000000000000000000000000000 | 00", is: kbin.ErrInvalid, msg: "Replicas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(hexBytes(t, tc.in))
			if err == nil {
				t.Fatal("Decode succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Decode error %v, want errors.Is %v", err, tc.is)
			}
			if tc.as != nil && !tc.as(err) {
				t.Errorf("Decode error %v (%T) has the wrong type or data", err, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Decode error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	long := strings.Repeat("x", kbin.MaxStringLen+1)
	tests := []struct {
		name  string
		rec   Record
		field string
	}{
		{"field absent at version", &RegisterBrokerRecord{Version: 1, IsMigratingZkBroker: true}, "IsMigratingZkBroker"},
		{"tagged field absent at version", &PartitionRecord{Version: 1, EligibleLeaderReplicas: []int32{1}}, "EligibleLeaderReplicas"},
		{"nested string too long", &RegisterBrokerRecord{EndPoints: []RegisterBrokerRecordBrokerEndpoint{{}, {Name: long}}}, "EndPoints[1].Name"},
		{"unknown tag collides with a known field", &PartitionRecord{UnknownTags: []RawTaggedField{{Tag: 0, Data: []byte{1}}}}, "UnknownTags"},
		{"unknown tags out of order", &TopicRecord{UnknownTags: []RawTaggedField{{Tag: 5}, {Tag: 4}}}, "UnknownTags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte{0xaa}
			out, err := AppendRecord(dst, tc.rec)
			var ee *EncodeError
			if !errors.As(err, &ee) || ee.Field != tc.field {
				t.Fatalf("AppendRecord error = %v, want *EncodeError for field %s", err, tc.field)
			}
			if len(out) != 1 {
				t.Fatalf("AppendRecord returned %d bytes on error, want the original 1", len(out))
			}
		})
	}
	if _, err := Encode(&NoOpRecord{Version: 3}); err == nil {
		t.Fatal("Encode(NoOpRecord v3) succeeded")
	}
}

// TestUnknownTagsPreserved checks that tags a version does not know survive
// a round trip, merged in tag order with the known ones.
func TestUnknownTagsPreserved(t *testing.T) {
	// PartitionRecord v0 with known tag 0 and unknown tags 1 (a v2 field
	// at v0) and 9.
	in := hexBytes(t, `01 03 00 | 00000000 | 00000000000000000000000000000000 | 01 01 01 01 | ffffffff | 00000000 | 00000000 |
		03 00 01 01 | 01 02 01 05 | 09 00`)
	rec, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	p := rec.(*PartitionRecord)
	if p.LeaderRecoveryState != 1 || len(p.UnknownTags) != 2 || p.UnknownTags[0].Tag != 1 || p.UnknownTags[1].Tag != 9 {
		t.Fatalf("decoded %+v", p)
	}
	out, err := Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(in) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", out, in)
	}
}

func TestDefaults(t *testing.T) {
	pc := NewPartitionChangeRecord()
	if pc.Leader != -2 || pc.LeaderRecoveryState != -1 || pc.PartitionId != -1 || pc.Isr != nil {
		t.Errorf("NewPartitionChangeRecord() = %+v", pc)
	}
	rb := NewRegisterBrokerRecord()
	if !rb.Fenced || rb.Rack == nil || *rb.Rack != "" || rb.CordonedLogDirs != nil {
		t.Errorf("NewRegisterBrokerRecord() = %+v", rb)
	}
	if p := NewProducerIdsRecord(); p.BrokerEpoch != -1 {
		t.Errorf("NewProducerIdsRecord().BrokerEpoch = %d, want -1", p.BrokerEpoch)
	}
	for _, k := range APIKeys() {
		r := NewRecord(k)
		if r == nil || r.APIKey() != k {
			t.Fatalf("NewRecord(%d) = %v", k, r)
		}
	}
	if NewRecord(6) != nil || APIKey(6).String() != "APIKey(6)" {
		t.Error("api key 6 should be unknown")
	}
	if len(APIKeys()) != 26 {
		t.Errorf("APIKeys() has %d keys, want 26", len(APIKeys()))
	}
}

// TestDecodeErrorPath checks that a decode error names the nested field
// and the byte offset within the record value.
func TestDecodeErrorPath(t *testing.T) {
	r := &RegisterBrokerRecord{Version: 3, EndPoints: []RegisterBrokerRecordBrokerEndpoint{{Name: "a", Host: "hhhhhhhhhh"}}}
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	// frame 3 + BrokerId 4 + IsMigratingZkBroker 1 + IncarnationId 16 +
	// BrokerEpoch 8 + count 1 + Name 2 = 35; Host's length byte is at 35.
	_, err = Decode(b[:41])
	var de *DecodeError
	var ke *kbin.Error
	if !errors.As(err, &de) || de.Field != "EndPoints[0].Host" || de.Message != "RegisterBrokerRecord" || de.Version != 3 {
		t.Fatalf("Decode error = %v, want a DecodeError for EndPoints[0].Host", err)
	}
	if !errors.As(err, &ke) || ke.Offset != 36 {
		t.Fatalf("Decode error = %v, want offset 36", err)
	}
}

// TestDecodeConfigRecord: a decoded ConfigRecord is the record set to its
// defaults and then to the encoded fields, null Value and unknown tags
// included, and decoding one allocates five objects: the record, its
// three strings and the pointer to the value (not also the default value
// that decoding replaces).
func TestDecodeConfigRecord(t *testing.T) {
	value := "1000"
	for _, c := range []struct {
		value *string
		tags  []RawTaggedField
	}{{&value, nil}, {nil, nil}, {&value, []RawTaggedField{{Tag: 7, Data: []byte{1, 2}}}}} {
		want := NewConfigRecord()
		want.ResourceType, want.ResourceName, want.Name, want.Value, want.UnknownTags = 2, "topic-a", "retention.ms", c.value, c.tags
		b, err := Encode(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode = %+v, want %+v", got, want)
		}
	}
	want := NewConfigRecord()
	want.ResourceType, want.ResourceName, want.Name, want.Value = 2, "topic-a", "retention.ms", &value
	b, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Decode(b); err != nil {
			t.Fatal(err)
		}
	}); n > 5 {
		t.Fatalf("Decode of a ConfigRecord allocated %.0f objects, want 5", n)
	}
}
