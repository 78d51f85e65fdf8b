package wire

import (
	"bytes"
	"testing"
)

// BenchmarkSubmitChangeRoundTrip measures the wire work the leader does
// for one client write arriving over the private SubmitChange RPC (the
// write of the side-by-side benchmark in bench/): decode the request frame
// holding one 256-byte record with the connection's Decoder, then frame
// the response. The record is
// opaque bytes here; decoding it as a metadata record is the metadata
// package's benchmark.
func BenchmarkSubmitChangeRoundTrip(b *testing.B) {
	frame, _ := oneRecordSubmitFrame(b)
	resp := NewSubmitChangeResponse()
	resp.LeaderID, resp.LeaderEpoch, resp.BaseOffset, resp.Epoch = 1, 3, 123456, 3
	var out []byte
	var d Decoder
	var r Request
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := d.Decode(frame, &r); err != nil {
			b.Fatal(err)
		}
		if got := r.Body.(*SubmitChangeRequest); len(got.Records) != 1 || len(got.Records[0]) != 280 {
			b.Fatalf("decoded %d records", len(got.Records))
		}
		out = AppendResponse(out[:0], r.Header.CorrelationID, resp)
	}
}

// oneRecordSubmitFrame is the frame (without its size) of a SubmitChange
// request of one 280-byte record, as a client of the side-by-side
// benchmark sends it, and the client id it carries.
func oneRecordSubmitFrame(tb testing.TB) (frame []byte, clientID string) {
	tb.Helper()
	req := NewSubmitChangeRequest()
	req.Records = [][]byte{bytes.Repeat([]byte{'v'}, 280)}
	id := "krabkabench"
	full, err := AppendRequest(nil, 1, &id, req)
	if err != nil {
		tb.Fatal(err)
	}
	return full[4:], id
}
