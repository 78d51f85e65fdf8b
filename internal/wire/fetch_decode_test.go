package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
)

// followerFetchFrame is a follower's Fetch (v18, with the cluster id) from
// offset, framed as a peer sender frames it, without the size prefix.
func followerFetchFrame(t *testing.T, offset int64) []byte {
	t.Helper()
	m := &kraft.FetchRequest{
		Header: kraft.Header{From: 2, To: 1}, Replica: kraft.ReplicaKey{ID: 2}, CurrentLeaderEpoch: 3,
		FetchOffset: kraft.Offset(offset), LastFetchedEpoch: 3, MaxWait: 500e6, MaxBytes: 1 << 20, HighWatermark: 7,
	}
	req, err := KmsgRequest(m, "cluster-a")
	if err != nil {
		t.Fatal(err)
	}
	req.SetVersion(18)
	id := "krabka-2"
	full, err := AppendRequest(nil, 1, &id, req)
	if err != nil {
		t.Fatal(err)
	}
	return full[4:]
}

// TestDecoderReusesFetch: a connection's Decoder decodes every Fetch into
// one request (Transient), which then costs the partition list and the
// cluster id's pointer, and the accepted Fetch's translation for the core
// costs the core's message alone; DecodeRequest shares nothing.
func TestDecoderReusesFetch(t *testing.T) {
	frames := [][]byte{followerFetchFrame(t, 5), followerFetchFrame(t, 6)}
	var d Decoder
	var got Request
	var first kmsg.Request
	for i, f := range frames {
		if err := d.Decode(f, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Transient || (i > 0 && got.Body != first) {
			t.Fatalf("Fetch %d: Transient %v, same body %v; want a transient, reused body", i, got.Transient, got.Body == first)
		}
		first = got.Body
		msg, answer, err := KRaftRequest(got.Body, "cluster-a", 1)
		if err != nil || answer != nil {
			t.Fatalf("KRaftRequest: %v, %v", answer, err)
		}
		if f := msg.(*kraft.FetchRequest); f.FetchOffset != kraft.Offset(5+i) || f.HighWatermark != 7 || f.Replica.ID != 2 {
			t.Fatalf("Fetch %d decoded as %+v", i, f)
		}
	}
	a, err := DecodeRequest(frames[0])
	if err != nil {
		t.Fatal(err)
	}
	if a.Transient || a.Body == first {
		t.Errorf("DecodeRequest: Transient %v, shares the Decoder's body %v; want neither", a.Transient, a.Body == first)
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := d.Decode(frames[0], &got); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("Decode of a Fetch allocated %.0f objects, want at most 2", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = KRaftRequest(got.Body, "cluster-a", 1) }); n > 1 {
		t.Errorf("KRaftRequest of an accepted Fetch allocated %.0f objects, want 1", n)
	}
}

// TestFetchTranslationAllocations: a follower's Fetch request and the
// leader's answer are each one heap object (the message with its one
// topic and partition, and the request's cluster id or the answer's
// broker), where the request was four and the answer three, and one more
// when the leader named itself.
func TestFetchTranslationAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	req := &kraft.FetchRequest{Header: kraft.Header{From: 2, To: 1}, Replica: kraft.ReplicaKey{ID: 2}, MaxBytes: 1 << 20}
	if n := testing.AllocsPerRun(100, func() { _, _ = KmsgRequest(req, "cluster-a") }); n != 1 {
		t.Errorf("KmsgRequest of a Fetch allocated %.0f objects, want 1", n)
	}
	resp := &kraft.FetchResponse{Header: kraft.Header{From: 1, To: 2}, HighWatermark: 5}
	records := []byte{1, 2, 3}
	if n := testing.AllocsPerRun(100, func() { _, _ = KmsgResponse(resp, 18, records) }); n != 1 {
		t.Errorf("KmsgResponse of a Fetch allocated %.0f objects, want 1", n)
	}
	r, err := KmsgResponse(resp, 18, records)
	if err != nil {
		t.Fatal(err)
	}
	if b := r.(*kmsg.FetchResponse).Brokers; len(b) != 0 || cap(b) != 1 {
		t.Errorf("answer's brokers: len %d cap %d, want room for the leader's", len(b), cap(b))
	}
}
