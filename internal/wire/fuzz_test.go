package wire

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeCorpus regenerates the committed seed corpora under testdata/fuzz:
//
//	go test ./internal/wire -run TestWriteFuzzCorpus -write-corpus
var writeCorpus = flag.Bool("write-corpus", false, "rewrite the seed corpora under testdata/fuzz")

// fuzzMaxFrame is the frame limit the fuzz targets read with; small so
// that the fuzzer reaches the size check.
const fuzzMaxFrame = 1 << 16

// allocBound is the most a decoder may allocate for an input of n bytes:
// a fixed allowance plus a small multiple of the input (W14: lengths are
// checked against the remaining bytes before anything is allocated).
func allocBound(n int) uint64 { return 256<<10 + 64*uint64(n) }

// measureAlloc returns the bytes allocated while f runs. It is exact only
// when nothing else allocates concurrently, which holds for fuzz workers
// and for seed replay (fuzz targets do not run in parallel).
func measureAlloc(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzFrame feeds arbitrary bytes to ReadFrame and DecodeRequest. Oracles:
// no panic; allocation bounded by the input size; errors are the
// documented ones; a request that decodes re-encodes (with our own request
// writer) into a frame that decodes to the same header and body.
func FuzzFrame(f *testing.F) {
	for _, seed := range frameSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			frame  []byte
			req    *Request
			rerr   error
			decErr error
		)
		alloc := measureAlloc(func() {
			frame, rerr = ReadFrame(bytes.NewReader(data), nil, fuzzMaxFrame)
			if rerr == nil {
				req, decErr = DecodeRequest(frame)
			}
		})
		if alloc > allocBound(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(data), alloc)
		}
		if rerr != nil {
			if !errors.Is(rerr, ErrFrameSize) && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadFrame error %v is not a documented one", rerr)
			}
			return
		}
		if decErr != nil {
			re, ok := errors.AsType[*RequestError](decErr)
			if !ok {
				t.Fatalf("DecodeRequest error %T is not a *RequestError", decErr)
			}
			if re.Close == (re.Answer != nil) {
				t.Fatalf("RequestError Close = %v with Answer %v", re.Close, re.Answer)
			}
			if re.Answer != nil {
				_ = AppendResponse(nil, re.Header.CorrelationID, re.Answer)
			}
			return
		}
		body := req.Body.AppendTo(nil)
		again, err := AppendRequest(nil, req.Header.CorrelationID, &req.Header.ClientID, req.Body)
		if err != nil {
			t.Fatalf("AppendRequest of a decoded request: %v", err)
		}
		req2, err := DecodeRequest(again[4:])
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if req2.Header != req.Header {
			t.Fatalf("header changed: %+v, then %+v", req.Header, req2.Header)
		}
		if !bytes.Equal(req2.Body.AppendTo(nil), body) {
			t.Fatalf("body changed through a re-encode")
		}
	})
}

// FuzzPrivateRPC feeds arbitrary bytes to the six private message
// decoders (kind selects one). Oracles: no panic; bounded allocation; a
// message that decodes re-encodes to bytes that decode to an equal message
// and encode identically.
func FuzzPrivateRPC(f *testing.F) {
	for _, s := range privateSeeds() {
		f.Add(s.kind, s.data)
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		fresh := privateKinds[int(kind)%len(privateKinds)]
		m := fresh()
		var err error
		alloc := measureAlloc(func() { err = m.ReadFrom(data) })
		if alloc > allocBound(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(data), alloc)
		}
		if err != nil {
			return
		}
		enc := m.AppendTo(nil)
		m2 := fresh()
		if err := m2.ReadFrom(enc); err != nil {
			t.Fatalf("re-encoded %T does not decode: %v", m, err)
		}
		if diff := cmp.Diff(m, m2, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(SubmitChangeRequest{})); diff != "" {
			t.Fatalf("%T changed through a re-encode (-first +second):\n%s", m, diff)
		}
		if !bytes.Equal(m2.AppendTo(nil), enc) {
			t.Fatalf("%T encodes differently the second time", m)
		}
	})
}

var privateKinds = [6]func() privateMsg{
	func() privateMsg { return NewSubmitChangeRequest() },
	func() privateMsg { return NewSubmitChangeResponse() },
	func() privateMsg { return NewMetadataFetchRequest() },
	func() privateMsg { return NewMetadataFetchResponse() },
	func() privateMsg { return NewReadImageRequest() },
	func() privateMsg { return NewReadImageResponse() },
}

// frameSeeds returns valid frames of every API at every version, and the
// bad-input shapes of the catalogue.
func frameSeeds() [][]byte {
	var seeds [][]byte
	for _, api := range SupportedAPIs() {
		for v := api.Min; v <= api.Max; v++ {
			req := newRequest(api.Key)
			if api.Key < 1000 {
				fill(req, rand.New(rand.NewPCG(uint64(api.Key), uint64(v))))
			}
			req.SetVersion(v)
			if ar, ok := req.(*kmsg.ApiVersionsRequest); ok {
				ar.ClientSoftwareName, ar.ClientSoftwareVersion, ar.ClusterID, ar.NodeID = "krabka", "0.1", nil, -1
			}
			if sc, ok := req.(*SubmitChangeRequest); ok {
				sc.Records = [][]byte{{1, 0x0c, 0}}
			}
			id := "seed"
			frame, err := AppendRequest(nil, int32(v), &id, req)
			if err != nil {
				panic(err)
			}
			seeds = append(seeds, frame)
		}
	}
	return append(seeds,
		nil,
		[]byte{0xff, 0xff, 0xff, 0xff},
		[]byte{0x16, 0x03, 0x01, 0x02, 0x00},
		sized(header(9999, 0, 1, -1, "", 0)),
		sized(header(KeyVote, 2, 1, -2, "", 0)),
		sized(header(KeyVote, 2, 1, 2, "\xc3\x28", 0)),
		sized(header(KeyVote, 3, 1, -1, "", 0)),
		sized(append(header(KeyAPIVersions, 5, 1, -1, "", 0), 0, 0, 0)),
		sized(header(KeyVote, 2, 1, -1, "", 1, 0, 9)),
	)
}

type privateSeed struct {
	kind uint8
	data []byte
}

func privateSeeds() []privateSeed {
	msgs := []privateMsg{
		&SubmitChangeRequest{Records: [][]byte{{1, 0x0c, 0}, {1, 0x14, 0}}},
		&SubmitChangeResponse{ErrorCode: 6, ErrorMessage: strp("not leader"), LeaderID: 2, LeaderEpoch: 5, BaseOffset: -1, Epoch: -1},
		&MetadataFetchRequest{FetchOffset: 100, MaxBytes: 1 << 20, ReplicaID: 4},
		&MetadataFetchResponse{LeaderID: 1, LeaderEpoch: 3, HighWatermark: 120, SnapshotID: MetadataFetchResponseSnapshotID{-1, -1}, Records: []byte{0, 0, 0, 0, 0, 0, 0, 100}},
		readImageRequestSample(),
		readImageResponseSample(),
	}
	var seeds []privateSeed
	for i, m := range msgs {
		seeds = append(seeds, privateSeed{uint8(i), m.AppendTo(nil)})
	}
	return append(seeds,
		privateSeed{0, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		privateSeed{0, []byte{0x02, 0x02, 0x00, 0x01, 0x00, 0x00}},
		privateSeed{3, append(make([]byte, 41), 0x00, 0x00)},
		privateSeed{4, []byte{0x01, 0x02, 0x02, 0x00, 0x00, 0x00}}, // null resource name
		privateSeed{5, append(make([]byte, 22), 0x01, 0x7f, 0x00)}, // topic count beyond input
	)
}

// TestWriteFuzzCorpus rewrites testdata/fuzz from frameSeeds and
// privateSeeds when -write-corpus is given. The corpus is committed so that
// plain `go test` replays it.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("use -write-corpus to rewrite testdata/fuzz")
	}
	write := func(target string, i int, values ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, v := range values {
			b.WriteString(v + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range frameSeeds() {
		write("FuzzFrame", i, fmt.Sprintf("[]byte(%q)", s))
	}
	for i, s := range privateSeeds() {
		write("FuzzPrivateRPC", i, fmt.Sprintf("byte(%q)", rune(s.kind)), fmt.Sprintf("[]byte(%q)", s.data))
	}
}
