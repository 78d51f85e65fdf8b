package client

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/metadata"
)

// sampleBatches returns a data batch of two metadata records at offset
// 10 in epoch 3 followed by a control batch at offset 12.
func sampleBatches(t testing.TB) []byte {
	t.Helper()
	tr := metadata.NewTopicRecord()
	tr.Name = "t"
	fl := metadata.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	p := recordbatch.DefaultParams()
	p.BaseOffset, p.PartitionLeaderEpoch = 10, 3
	var b recordbatch.Builder
	b.Reset(nil, p)
	for _, r := range []metadata.Record{fl, tr} {
		v, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(0, nil, v, nil)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	p.BaseOffset = 12
	lc := control.NewLeaderChangeMessage()
	lc.LeaderId = 1
	k, v, err := control.Encode(lc)
	if err != nil {
		t.Fatal(err)
	}
	out, err = recordbatch.AppendControlBatch(out, p, 0, recordbatch.KeyValue{Key: k, Value: v})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecodeBatches(t *testing.T) {
	raw := sampleBatches(t)
	got, err := DecodeBatches(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].BaseOffset != 10 || got[0].Epoch != 3 || got[0].Control || len(got[0].Records) != 2 || !got[1].Control || got[1].BaseOffset != 12 {
		t.Fatalf("DecodeBatches = %+v", got)
	}
	if tr, ok := got[0].Records[1].Metadata.(*metadata.TopicRecord); !ok || tr.Name != "t" || got[0].Records[1].Offset != 11 {
		t.Errorf("second record = %+v at offset %d, want TopicRecord t at 11", got[0].Records[1].Metadata, got[0].Records[1].Offset)
	}
	if got[1].Records[0].Metadata != nil {
		t.Errorf("control record decoded as metadata: %+v", got[1].Records[0].Metadata)
	}
	raw[len(raw)-1] ^= 0xff // the control batch's CRC no longer matches
	got, err = DecodeBatches(raw)
	if err == nil || len(got) != 1 {
		t.Errorf("DecodeBatches of a corrupt second batch = %d batches, %v; want the first and an error", len(got), err)
	}
	if _, err := DecodeBatches(raw[:20]); err == nil {
		t.Error("DecodeBatches of a truncated batch succeeded")
	}
	if got, err := DecodeBatches(nil); err != nil || got != nil {
		t.Errorf("DecodeBatches(nil) = %v, %v", got, err)
	}
}

// FuzzDecodeBatches: any bytes decode to batches or an error, never a
// panic; batches decoded are in offset order and their records copy
// the input.
func FuzzDecodeBatches(f *testing.F) {
	f.Add(sampleBatches(f))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 70))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		got, err := DecodeBatches(b)
		if err == nil && len(b) > 0 && len(got) == 0 {
			t.Fatal("bytes without batches decoded without error")
		}
		for i := range b {
			b[i] ^= 0xff
		}
		for _, batch := range got {
			for _, r := range batch.Records {
				if r.Offset < batch.BaseOffset {
					t.Fatalf("record offset %d below the batch's %d", r.Offset, batch.BaseOffset)
				}
				if len(r.Value) > 0 && !bytes.Contains(in, r.Value) {
					t.Fatal("a record's value changed with the input: it aliases it")
				}
			}
		}
	})
}

// TestAnswerError maps every code the private RPCs answer with to the
// condition a caller branches on.
func TestAnswerError(t *testing.T) {
	msg := "details"
	cases := []struct {
		code          int16
		leader        int32
		want          error
		wantNotLeader bool
	}{
		{0, 1, nil, false},
		{kerr.NotLeaderForPartition.Code, 2, ErrNotLeader, true},
		{kerr.NotLeaderForPartition.Code, -1, ErrLeaderUnknown, false},
		{kerr.BrokerNotAvailable.Code, -1, ErrShuttingDown, false},
		{kerr.InvalidRequest.Code, -1, ErrInvalidChange, false},
		{kerr.RequestTimedOut.Code, -1, ErrReadTimeout, false},
		{kerr.UnknownServerError.Code, -1, kerr.UnknownServerError, false},
	}
	for _, tc := range cases {
		err := answerError(tc.code, &msg, tc.leader, 7)
		if tc.want == nil {
			if err != nil {
				t.Errorf("answerError(%d) = %v, want nil", tc.code, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("answerError(%d, leader %d) = %v, want %v", tc.code, tc.leader, err, tc.want)
		}
		nl, ok := errors.AsType[*NotLeaderError](err)
		if ok != tc.wantNotLeader || (ok && (nl.LeaderID != tc.leader || nl.Epoch != 7 || nl.Message != msg)) {
			t.Errorf("answerError(%d, leader %d) = %#v, NotLeaderError wanted %v", tc.code, tc.leader, err, tc.wantNotLeader)
		}
	}
}
