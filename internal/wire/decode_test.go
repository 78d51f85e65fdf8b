package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sized prefixes body with its 4-byte size.
func sized(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// header builds a request header by hand: key, version, correlation id,
// client id length and bytes, and for flexible versions the tag section.
func header(key, version int16, corr int32, clientIDLen int16, clientID string, tags ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(clientIDLen))
	b = append(b, clientID...)
	return append(b, tags...)
}

func TestReadFrame(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{"one frame", sized([]byte("hello")), 100, []byte("hello"), nil},
		{"empty frame", sized(nil), 100, []byte{}, nil},
		{"exactly the maximum", sized(bytes.Repeat([]byte{7}, 100)), 100, bytes.Repeat([]byte{7}, 100), nil},
		{"one byte over the maximum", sized(bytes.Repeat([]byte{7}, 101)), 100, nil, ErrFrameSize},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xfe, 1, 2}, 100, nil, ErrFrameSize},
		{"TLS ClientHello on a plaintext port", []byte{0x16, 0x03, 0x01, 0x02, 0x00}, DefaultMaxFrameSize, nil, ErrFrameSize},
		{"clean end of input", nil, 100, nil, io.EOF},
		{"truncated size prefix", []byte{0, 0}, 100, nil, io.ErrUnexpectedEOF},
		{"truncated body", []byte{0, 0, 0, 5, 1, 2}, 100, nil, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tc.in), nil, tc.max)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ReadFrame() error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(got, tc.want) {
				t.Errorf("ReadFrame() = %x, want %x", got, tc.want)
			}
		})
	}
}

func TestReadFrameSizeErrorCarriesSizes(t *testing.T) {
	_, err := ReadFrame(bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff}), nil, DefaultMaxFrameSize)
	fe, ok := errors.AsType[*FrameSizeError](err)
	if !ok || fe.Size != 0x7fffffff || fe.Max != DefaultMaxFrameSize {
		t.Fatalf("ReadFrame error = %#v, want *FrameSizeError{Size: 2147483647, Max: %d}", err, DefaultMaxFrameSize)
	}
	_, err = ReadFrame(bytes.NewReader([]byte{0x80, 0, 0, 0}), nil, DefaultMaxFrameSize)
	if fe, ok := errors.AsType[*FrameSizeError](err); !ok || fe.Size != -1<<31 || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("ReadFrame error = %v, want a negative-size *FrameSizeError", err)
	}
}

// A peer that announces a big frame and sends little makes ReadFrame
// allocate in proportion to what arrived, not to the announced size.
func TestReadFrameAllocatesAsBytesArrive(t *testing.T) {
	in := append([]byte{0x06, 0, 0, 0}, make([]byte, 1000)...) // announces 96 MiB
	got, err := ReadFrame(bytes.NewReader(in), nil, DefaultMaxFrameSize)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadFrame error = %v, want unexpected EOF", err)
	}
	if cap(got) > growStep {
		t.Errorf("buffer capacity %d after 1000 bytes, want at most %d", cap(got), growStep)
	}
}

func TestReadFrameReusesAndGrowsBuffer(t *testing.T) {
	big := bytes.Repeat([]byte("abcdefgh"), 3*growStep/8+5)
	stream := append(sized([]byte("small")), sized(big)...)
	r := iotest.HalfReader(bytes.NewReader(stream))
	buf := make([]byte, 0, 64)
	f1, err := ReadFrame(r, buf, DefaultMaxFrameSize)
	if err != nil || string(f1) != "small" {
		t.Fatalf("first frame = %q, %v", f1, err)
	}
	if &f1[0] != &buf[:1][0] {
		t.Error("a frame that fits was not read into the caller's buffer")
	}
	f2, err := ReadFrame(r, f1, DefaultMaxFrameSize)
	if err != nil || !bytes.Equal(f2, big) {
		t.Fatalf("second frame: %d bytes, %v; want %d bytes", len(f2), err, len(big))
	}
	if _, err := ReadFrame(r, f2, DefaultMaxFrameSize); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

// TestDecodeRequestBadInput covers the header rows of the bad-input
// catalogue (W3–W15 in docs/reliability.md): every case closes the
// connection.
func TestDecodeRequestBadInput(t *testing.T) {
	vote2 := func() []byte {
		r := kmsg.NewPtrVoteRequest()
		r.SetVersion(2)
		return r.AppendTo(nil)
	}()
	for _, tc := range []struct {
		name     string
		frame    []byte
		wantKind error
	}{
		{"W4 empty frame", nil, ErrMalformedHeader},
		{"W4 three bytes", []byte{0, 52, 0}, ErrMalformedHeader},
		{"W4 key and version only", []byte{0, 52, 0, 2}, ErrMalformedHeader},
		{"truncated header before the client id", header(52, 2, 1, 0, "")[:9], ErrMalformedHeader},
		{"W9 unknown api key", header(9999, 0, 1, -1, "", 0), ErrUnknownAPIKey},
		{"W9 negative api key", header(-1, 0, 1, -1, "", 0), ErrUnknownAPIKey},
		{"W10 Produce is not served", header(0, 9, 1, -1, "", 0), ErrUnknownAPIKey},
		{"W10 Metadata is not served", header(3, 12, 1, -1, "", 0), ErrUnknownAPIKey},
		{"W10 unknown key with a short frame", []byte{0, 3, 0, 0}, ErrUnknownAPIKey},
		{"client id length below -1", header(52, 2, 1, -2, "", 0), ErrMalformedHeader},
		{"client id length most negative", header(52, 2, 1, -32768, "", 0), ErrMalformedHeader},
		{"W13 client id longer than the frame", header(52, 2, 1, 10, "abc"), ErrMalformedHeader},
		{"W13 client id not UTF-8", header(52, 2, 1, 2, "\xc3\x28", 0), ErrMalformedHeader},
		{"header tags missing", header(52, 2, 1, 1, "a"), ErrMalformedHeader},
		{"W16 header tag larger than the frame", header(52, 2, 1, 1, "a", 1, 0, 9, 1), ErrMalformedHeader},
		{"W15 header tag count varint too long", header(52, 2, 1, 1, "a", 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrMalformedHeader},
		{"W14 body truncated", append(header(52, 2, 1, 1, "a", 0), vote2[:len(vote2)-1]...), ErrMalformedBody},
		{"W14 body array longer than the frame", append(header(52, 2, 1, 1, "a", 0), 0, 0, 0, 0, 1, 0x7f), ErrMalformedBody},
		{"private body truncated", append(header(KeyMetadataFetch, 0, 1, -1, "", 0), 1, 2, 3), ErrMalformedBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRequest(tc.frame)
			if err == nil {
				t.Fatalf("DecodeRequest(%x) = %+v, want an error", tc.frame, got)
			}
			re, ok := errors.AsType[*RequestError](err)
			if !ok {
				t.Fatalf("DecodeRequest error %T %v, want *RequestError", err, err)
			}
			if !errors.Is(err, tc.wantKind) || re.Kind != tc.wantKind {
				t.Errorf("DecodeRequest error kind %v, want %v", re.Kind, tc.wantKind)
			}
			if !re.Close || re.Answer != nil {
				t.Errorf("Close = %v, Answer = %v; want Close and no answer", re.Close, re.Answer)
			}
		})
	}
}

func TestDecodeRequestHeaderDetails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
		want  RequestHeader
	}{
		{"null client id reads as empty", header(KeyDescribeQuorum, 0, 77, -1, "", 0),
			RequestHeader{APIKey: KeyDescribeQuorum, APIVersion: 0, CorrelationID: 77, Version: 2}},
		{"empty client id", header(KeyBeginQuorumEpoch, 0, -5, 0, ""),
			RequestHeader{APIKey: KeyBeginQuorumEpoch, APIVersion: 0, CorrelationID: -5, Version: 1}},
		{"UTF-8 client id", header(KeyBeginQuorumEpoch, 0, 1, 6, "kåfka"),
			RequestHeader{APIKey: KeyBeginQuorumEpoch, CorrelationID: 1, ClientID: "kåfka", Version: 1}},
		{"unknown header tags are skipped", header(KeyDescribeQuorum, 0, 3, 1, "x", 2, 0, 1, 9, 5, 0),
			RequestHeader{APIKey: KeyDescribeQuorum, CorrelationID: 3, ClientID: "x", Version: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// DescribeQuorum v0 body: empty topics (compact array 0+1), tags.
			// BeginQuorumEpoch v0 body: null cluster id, empty topics.
			body := []byte{1, 0}
			if tc.want.APIKey == KeyBeginQuorumEpoch {
				body = []byte{0xff, 0xff, 0, 0, 0, 0}
			}
			got, err := DecodeRequest(append(tc.frame, body...))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if got.Header != tc.want {
				t.Errorf("header = %+v, want %+v", got.Header, tc.want)
			}
		})
	}
}

// W17: bytes after a complete body are ignored, as Kafka ignores them.
func TestDecodeRequestIgnoresTrailingBytes(t *testing.T) {
	frame := append(header(KeyDescribeQuorum, 0, 1, -1, "", 0), 1, 0, 0xde, 0xad)
	if _, err := DecodeRequest(frame); err != nil {
		t.Fatalf("DecodeRequest with trailing bytes: %v", err)
	}
}

// TestDecodeRequestUnsupportedVersions checks W11 for every API: a version
// below or above our range closes the connection, except ApiVersions (W12),
// which is answered at v0.
func TestDecodeRequestUnsupportedVersions(t *testing.T) {
	for _, api := range SupportedAPIs() {
		for _, v := range []int16{api.Min - 1, api.Max + 1, -1, 0x7fff} {
			if api.Supports(v) {
				continue
			}
			t.Run(fmt.Sprintf("%s/v%d", api.Name, v), func(t *testing.T) {
				tags := []byte{}
				if RequestHeaderVersion(api.Key, v) == 2 {
					tags = []byte{0}
				}
				frame := append(header(api.Key, v, 31, 3, "abc", tags...), 0, 0, 0, 0)
				_, err := DecodeRequest(frame)
				re, ok := errors.AsType[*RequestError](err)
				if !ok || !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("DecodeRequest error = %v, want unsupported version", err)
				}
				if re.Header.CorrelationID != 31 || re.Header.APIVersion != v {
					t.Errorf("error header = %+v, want correlation id 31, version %d", re.Header, v)
				}
				if api.Key != KeyAPIVersions {
					if !re.Close || re.Answer != nil {
						t.Errorf("Close = %v, Answer = %v; want close without answer", re.Close, re.Answer)
					}
					return
				}
				if re.Close || re.Answer == nil {
					t.Fatalf("Close = %v, Answer = %v; want an answer", re.Close, re.Answer)
				}
				// Kafka's answer, byte for byte: size 16, correlation id,
				// header v0 (no tag byte), error 35, one ApiKeys row
				// {18, 0, 4}.
				want := []byte{
					0, 0, 0, 16,
					0, 0, 0, 31,
					0, 35,
					0, 0, 0, 1,
					0, 18, 0, 0, 0, 4,
				}
				if got := AppendResponse(nil, re.Header.CorrelationID, re.Answer); !bytes.Equal(got, want) {
					t.Errorf("answer frame = %x, want %x", got, want)
				}
			})
		}
	}
}

// An ApiVersions request at a higher version than we serve is answered even
// when its body is something we could not decode: the body is not read.
func TestDecodeRequestApiVersionsV5BodyIsNotRead(t *testing.T) {
	frame := append(header(KeyAPIVersions, 5, 8, 1, "c", 0), 0xff, 0xff)
	_, err := DecodeRequest(frame)
	re, ok := errors.AsType[*RequestError](err)
	if !ok || re.Close || re.Answer == nil {
		t.Fatalf("DecodeRequest = %v; want an UNSUPPORTED_VERSION answer", err)
	}
	// But a malformed header is still fatal.
	_, err = DecodeRequest(header(KeyAPIVersions, 5, 8, 1, "c"))
	if re, ok := errors.AsType[*RequestError](err); !ok || !re.Close || !errors.Is(err, ErrMalformedHeader) {
		t.Fatalf("DecodeRequest with a bad header = %v; want a malformed-header close", err)
	}
}

func TestRequestErrorMessage(t *testing.T) {
	_, err := DecodeRequest(header(KeyVote, 9, 12, -1, "", 0))
	msg := err.Error()
	for _, want := range []string{"unsupported api version", "api key 52", "version 9", "correlation id 12", "Vote v9 is outside 0-2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestAppendRequestRejectsLongClientID(t *testing.T) {
	id := strings.Repeat("x", 0x8000)
	if _, err := AppendRequest(nil, 1, &id, kmsg.NewPtrVoteRequest()); err == nil {
		t.Error("AppendRequest with a 32768-byte client id succeeded")
	}
}

// TestDecoderSequence: one Decoder over a connection's frames reads every
// header as DecodeRequest does, whichever client id came before: the same
// one again, another, null after one, and bad input after a valid id that
// is a prefix of or equal to the bytes at hand.
func TestDecoderSequence(t *testing.T) {
	dq := func(corr int32, n int16, id string) []byte {
		return append(header(KeyDescribeQuorum, 0, corr, n, id, 0), 1, 0)
	}
	frames := [][]byte{
		dq(1, 1, "x"), dq(2, 1, "x"), dq(3, 6, "kåfka"), dq(4, -1, ""), dq(5, 0, ""),
		dq(6, 6, "kåfka"), dq(7, 3, "abc"), dq(8, 3, "abc"), dq(9, 1, "a"),
	}
	var d Decoder
	for i, f := range frames {
		want, err := DecodeRequest(f)
		if err != nil {
			t.Fatalf("frame %d: DecodeRequest: %v", i, err)
		}
		var got Request
		if err := d.Decode(f, &got); err != nil {
			t.Fatalf("frame %d: Decode: %v", i, err)
		}
		if got.Header != want.Header {
			t.Errorf("frame %d: header %+v, want %+v", i, got.Header, want.Header)
		}
	}
	for _, tc := range []struct {
		last  []byte
		frame []byte
	}{
		{dq(1, 3, "abc"), header(52, 2, 1, 10, "abc")},
		{dq(1, 1, "a"), header(52, 2, 1, 10, "abc")},
		{dq(1, 1, "a"), header(52, 2, 1, 2, "\xc3\x28", 0)},
		{dq(1, 1, "a"), header(52, 2, 1, 1, "a")},
	} {
		var d Decoder
		var req Request
		if err := d.Decode(tc.last, &req); err != nil {
			t.Fatal(err)
		}
		before := req
		err := d.Decode(tc.frame, &req)
		if _, want := DecodeRequest(tc.frame); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("Decode(%x) after %q = %v, DecodeRequest = %v", tc.frame, before.Header.ClientID, err, want)
		}
		if req != before {
			t.Errorf("Decode(%x) changed the request on error", tc.frame)
		}
	}
}

// TestDecoderAllocations: a Decoder that saw the client id before decodes
// a SubmitChange request of one record into the caller's Request with one
// heap object, the body, which holds the record list of one record
// (DecodeRequest allocated four: the Request, the client id and the list
// besides).
func TestDecoderAllocations(t *testing.T) {
	frame, id := oneRecordSubmitFrame(t)
	var d Decoder
	var got Request
	if n := testing.AllocsPerRun(100, func() {
		if err := d.Decode(frame, &got); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Fatalf("Decode allocated %.0f objects per request, want 1", n)
	}
	if got.Header.ClientID != id || len(got.Body.(*SubmitChangeRequest).Records) != 1 {
		t.Fatalf("decoded %+v", got)
	}
}
