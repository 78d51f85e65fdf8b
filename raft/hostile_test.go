package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// rawConn is a client that writes whatever bytes a test gives it to a
// controller listener and reads back frames: the hostile side of the
// wire. Every read and write is bounded by a deadline that only turns a
// hang into a failure.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

// rawDeadline bounds each raw connection's whole life.
const rawDeadline = 10 * time.Second

func dialRaw(t *testing.T, addr net.Addr) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), rawDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(rawDeadline))
	return &rawConn{t: t, nc: nc}
}

// write sends b as it is.
func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send frames req with correlation id corr and sends it.
func (c *rawConn) send(corr int32, req kmsg.Request) {
	c.t.Helper()
	id := "hostile"
	b, err := wire.AppendRequest(nil, corr, &id, req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(b)
}

// recv reads the answer to req, which must carry correlation id corr.
func (c *rawConn) recv(corr int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	frame, err := wire.ReadFrame(c.nc, nil, wire.DefaultMaxFrameSize)
	if err != nil {
		c.t.Fatalf("read the answer to %T: %v", req, err)
	}
	if got, err := wire.ResponseCorrelationID(frame); err != nil || got != corr {
		c.t.Fatalf("answer correlation id %d, %v; want %d", got, err, corr)
	}
	resp, err := wire.DecodeResponse(frame, req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call sends req and returns its answer.
func (c *rawConn) call(corr int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.send(corr, req)
	return c.recv(corr, req)
}

// expectClosed fails unless the listener closes the connection without
// writing a byte (before the deadline).
func (c *rawConn) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) || !(errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset")) {
		c.t.Fatalf("read = %d bytes, %v; want the listener to close the connection", n, err)
	}
}

// errorCode is the top-level ErrorCode of any response that has one.
func errorCode(resp kmsg.Response) int16 {
	return int16(reflect.ValueOf(resp).Elem().FieldByName("ErrorCode").Int())
}

// hostileNode is a lone controller (ForTests: it elects itself and
// writes no NoOpRecords) that a hostile row attacks, and what it must
// still look like afterwards.
type hostileNode struct {
	t *testing.T
	c *Controller
}

// startHostileNode starts a lone voter of cluster "hostile-cluster",
// adjusted by adjust, and waits until it leads with everything committed
// and applied.
func startHostileNode(t *testing.T, adjust func(*Config)) *hostileNode {
	t.Helper()
	c := newTestClusterWith(t, 1, "hostile-cluster", adjust).node(1)
	if _, err := c.SubmitChange(t.Context(), []metadata.Record{metadataVersionRecord()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lone voter to lead with everything applied", func() bool {
		st := c.QuorumState()
		return st.Role == RoleLeader && st.HighWatermark == st.LogEndOffset && st.AppliedOffset == st.LogEndOffset
	})
	return &hostileNode{t: t, c: c}
}

// mark is the node's state a hostile input must not change: its quorum
// state (epoch, leader, log end, high watermark, applied offset), its
// image, and what its DescribeQuorum says of every replica.
type mark struct {
	state    QuorumState
	image    *metadata.Image
	replicas []ReplicaState
}

func (h *hostileNode) mark() mark {
	h.t.Helper()
	d, err := h.c.DescribeQuorum(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	var rs []ReplicaState
	for _, r := range append(d.Voters, d.Observers...) {
		r.LastFetchTimestamp, r.LastCaughtUpTimestamp = 0, 0 // a leader's own are now
		rs = append(rs, r)
	}
	return mark{state: h.c.QuorumState(), image: h.c.CurrentImage(), replicas: rs}
}

// unchanged fails unless the node's state is still before.
func (h *hostileNode) unchanged(before mark) {
	h.t.Helper()
	after := h.mark()
	if after.state != before.state {
		h.t.Errorf("quorum state changed: %+v, was %+v", after.state, before.state)
	}
	if after.image != before.image {
		h.t.Errorf("image changed: offset %d, was %d", after.image.Offset(), before.image.Offset())
	}
	if !reflect.DeepEqual(after.replicas, before.replicas) {
		h.t.Errorf("replica states changed: %+v, were %+v", after.replicas, before.replicas)
	}
}

// stats are the counters of the node's first listener.
func (h *hostileNode) stats() transport.ServerStats { return h.c.srv.srvs[0].Stats() }

// closes sends b on a fresh connection and checks that the listener
// closes it without an answer, counts it under the invalid reason that
// count reads (nil: not counted as invalid), and changes nothing.
func (h *hostileNode) closes(b []byte, count func(transport.InvalidCounts) uint64) {
	h.t.Helper()
	before := h.mark()
	var was uint64
	if count != nil {
		was = count(h.stats().Invalid)
	}
	conn := dialRaw(h.t, h.c.Addr())
	conn.write(b)
	conn.expectClosed()
	if count != nil {
		waitFor(h.t, fmt.Sprintf("the invalid frame %x to be counted under its reason (%+v)", b, h.stats().Invalid), func() bool { return count(h.stats().Invalid) == was+1 })
	}
	h.unchanged(before)
}

// answers sends req on a fresh connection, checks the answer with check,
// that the connection stays open (it answers ApiVersions next), and that
// nothing changed.
func (h *hostileNode) answers(req kmsg.Request, check func(kmsg.Response) error) {
	h.t.Helper()
	h.answersBytes(encode(h.t, req), req, check)
}

// answersBytes is answers for the frame b, req's decoding as the listener
// must read it.
func (h *hostileNode) answersBytes(b []byte, req kmsg.Request, check func(kmsg.Response) error) {
	h.t.Helper()
	before := h.mark()
	conn := dialRaw(h.t, h.c.Addr())
	conn.write(b)
	if err := check(conn.recv(1, req)); err != nil {
		h.t.Errorf("%T v%d: %v", req, req.GetVersion(), err)
	}
	if _, err := apiVersionsOn(h.t, conn.nc); err != nil {
		h.t.Errorf("the connection did not stay open: %v", err)
	}
	h.unchanged(before)
}

// served is a check that an answer carries no top-level error.
func served(resp kmsg.Response) error {
	if code := errorCode(resp); code != 0 {
		return fmt.Errorf("error %d, want none", code)
	}
	return nil
}

// frame returns a request frame: the size prefix, then header and body as
// given, so that a row can break either.
func frame(parts ...[]byte) []byte {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// headerV1 is a request header v1: key, version, correlation id 1 and the
// client id "h".
func headerV1(key, version int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	return append(b, 0, 1, 'h')
}

// encode returns req's frame, with client id "h".
func encode(t *testing.T, req kmsg.Request) []byte {
	t.Helper()
	id := "h"
	b, err := wire.AppendRequest(nil, 1, &id, req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileRow is one row of the bad-input catalogue of the controller
// listener (docs/security.md, "Hostile input"): the input, the live check
// against a real listener, and the tests elsewhere that cover it too
// ("dir.TestName", dir relative to the module root), each of which must
// exist. A row has a live check, or names the tests that are its check.
type hostileRow struct {
	id, input string
	live      func(t *testing.T, h *hostileNode)
	tests     []string
}

func frameSizeCount(c transport.InvalidCounts) uint64  { return c.FrameSize }
func unknownKeyCount(c transport.InvalidCounts) uint64 { return c.UnknownAPIKey }
func versionCount(c transport.InvalidCounts) uint64    { return c.UnsupportedVersion }
func headerCount(c transport.InvalidCounts) uint64     { return c.MalformedHeader }
func bodyCount(c transport.InvalidCounts) uint64       { return c.MalformedBody }
func anyInvalid(c transport.InvalidCounts) uint64 {
	return c.FrameSize + c.UnknownAPIKey + c.UnsupportedVersion + c.MalformedHeader + c.MalformedBody
}

// kraftRequest is m as a Kafka request of this node's cluster at the
// highest version we serve.
func kraftRequest(t *testing.T, h *hostileNode, m kraft.Message) kmsg.Request {
	t.Helper()
	req, err := wire.KmsgRequest(m, h.c.eng.clusterID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := wire.LookupAPI(req.Key())
	req.SetVersion(a.Max)
	return req
}

// fetchFrom is a Fetch from replica 2 (not a voter: serving it would
// record an observer) at the node's epoch and log end.
func fetchFrom(h *hostileNode) *kraft.FetchRequest {
	st := h.c.QuorumState()
	return &kraft.FetchRequest{
		Replica: kraft.ReplicaKey{ID: 2}, CurrentLeaderEpoch: kraft.Epoch(st.Epoch),
		FetchOffset: kraft.Offset(st.LogEndOffset), LastFetchedEpoch: kraft.Epoch(st.Epoch),
		MaxBytes: 1 << 20, HighWatermark: -1,
	}
}

// fetchPartitionCode answers with the error codes of a Fetch answer:
// top level and the single partition's (-1 when there is none).
func fetchCodes(resp kmsg.Response) (top, part int16) {
	r := resp.(*kmsg.FetchResponse)
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
		return r.ErrorCode, r.Topics[0].Partitions[0].ErrorCode
	}
	return r.ErrorCode, -1
}

// wantCodes returns a check that an answer's top-level and partition
// codes (read by codes) are top and part.
func wantCodes(codes func(kmsg.Response) (int16, int16), top, part int16) func(kmsg.Response) error {
	return func(resp kmsg.Response) error {
		if gt, gp := codes(resp); gt != top || gp != part {
			return fmt.Errorf("error codes top %d partition %d, want %d and %d (%+v)", gt, gp, top, part, resp)
		}
		return nil
	}
}

func voteCodes(resp kmsg.Response) (int16, int16) {
	r := resp.(*kmsg.VoteResponse)
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
		p := r.Topics[0].Partitions[0]
		if p.VoteGranted {
			return r.ErrorCode, -2 // granted: never what a row wants
		}
		return r.ErrorCode, p.ErrorCode
	}
	return r.ErrorCode, -1
}

func fetchSnapshotCodes(resp kmsg.Response) (int16, int16) {
	r := resp.(*kmsg.FetchSnapshotResponse)
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
		return r.ErrorCode, r.Topics[0].Partitions[0].ErrorCode
	}
	return r.ErrorCode, -1
}

func beginQuorumEpochCodes(resp kmsg.Response) (int16, int16) {
	r := resp.(*kmsg.BeginQuorumEpochResponse)
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
		return r.ErrorCode, r.Topics[0].Partitions[0].ErrorCode
	}
	return r.ErrorCode, -1
}

// hostileRows is the catalogue, W1 to W37.
func hostileRows() []hostileRow {
	return []hostileRow{
		{id: "W1", input: "TCP connect, no bytes",
			tests: []string{"raft.TestStartEnforcesIdleTimeout", "internal/transport.TestIdleConnectionExpires", "internal/transport.TestHandshakeTimeout", "raft.TestConnectionStormAndSlowloris"}},
		{id: "W2", input: "a partial frame, then a stall (slowloris)",
			tests: []string{"internal/transport.TestSlowFrameIsCutOff", "raft.TestConnectionStormAndSlowloris"}},
		{id: "W3", input: "a negative size prefix", live: func(t *testing.T, h *hostileNode) {
			h.closes([]byte{0xff, 0xff, 0xff, 0xfe}, frameSizeCount)
		}, tests: []string{"internal/wire.TestDecodeRequestBadInput"}},
		{id: "W4", input: "size 0, or smaller than a request header", live: func(t *testing.T, h *hostileNode) {
			h.closes([]byte{0, 0, 0, 0}, headerCount)
			h.closes(frame([]byte{0, 55, 0, 0}), headerCount)
			h.closes(frame(headerV1(55, 0)[:7]), headerCount)
		}},
		{id: "W5", input: "a size above socket.request.max.bytes (no body follows)", live: func(t *testing.T, h *hostileNode) {
			h.closes(binary.BigEndian.AppendUint32(nil, uint32(wire.DefaultMaxFrameSize)+1), frameSizeCount)
		}, tests: []string{"raft.TestStartEnforcesRequestMaxBytes", "internal/transport.TestSASLOversizedFrame", "raft.TestHostileSASLListener"}},
		{id: "W6", input: "a TLS ClientHello on the plaintext port", live: func(t *testing.T, h *hostileNode) {
			h.closes([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}, frameSizeCount)
		}},
		{id: "W7", input: "plaintext on a TLS port",
			tests: []string{"internal/transport.TestTLSListenerClosesPlaintextAndUncertifiedClients", "raft.TestSSLListenerRefusesUntrustedClients"}},
		{id: "W8", input: "a SubmitChange frame cut by EOF mid-body", live: func(t *testing.T, h *hostileNode) {
			enc, err := metadata.Encode(topicRecord("cut-short"))
			if err != nil {
				t.Fatal(err)
			}
			req := wire.NewSubmitChangeRequest()
			req.Records = [][]byte{enc}
			b := encode(t, req)
			before := h.mark()
			conn := dialRaw(t, h.c.Addr())
			conn.write(b[:len(b)-3])
			_ = conn.nc.(*net.TCPConn).CloseWrite()
			conn.expectClosed()
			h.unchanged(before)
		}},
		{id: "W9", input: "an unknown API key", live: func(t *testing.T, h *hostileNode) {
			h.closes(frame(headerV1(9999, 0)), unknownKeyCount)
		}},
		{id: "W10", input: "an API the controller listener does not serve (Produce, Metadata)", live: func(t *testing.T, h *hostileNode) {
			produce := kmsg.NewPtrProduceRequest()
			produce.SetVersion(9)
			h.closes(encode(t, produce), unknownKeyCount)
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(12)
			h.closes(encode(t, md), unknownKeyCount)
		}},
		{id: "W11", input: "a served API at a version too high or negative", live: func(t *testing.T, h *hostileNode) {
			// Each header ends in an empty tag section (header v2), as
			// these APIs are flexible.
			h.closes(frame(headerV1(wire.KeyVote, 3), []byte{0}), versionCount)
			h.closes(frame(headerV1(wire.KeyVote, -1), []byte{0}), versionCount)
			h.closes(frame(headerV1(wire.KeyFetch, 12), []byte{0}), versionCount)
		}},
		{id: "W12", input: "ApiVersions at a version we do not support", live: func(t *testing.T, h *hostileNode) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(99)
			before := h.mark()
			conn := dialRaw(t, h.c.Addr())
			conn.write(frame(headerV1(wire.KeyAPIVersions, 99), []byte{0})) // header v2: no tags
			v0 := kmsg.NewPtrApiVersionsRequest()                           // the answer is v0
			resp := conn.recv(1, v0).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != wire.KeyAPIVersions || resp.ApiKeys[0].MaxVersion != 4 {
				t.Errorf("ApiVersions v99 answered %+v, want v0 UNSUPPORTED_VERSION listing ApiVersions 0-4", resp)
			}
			if _, err := apiVersionsOn(t, conn.nc); err != nil {
				t.Errorf("the connection did not stay open: %v", err)
			}
			h.unchanged(before)
		}, tests: []string{"internal/transport.TestServerAnswersUnsupportedApiVersions"}},
		{id: "W13", input: "a client id longer than the frame, or not UTF-8", live: func(t *testing.T, h *hostileNode) {
			hdr := headerV1(wire.KeyBeginQuorumEpoch, 0)
			long := append(hdr[:8:8], 0x10, 0x00, 'h')
			h.closes(frame(long), headerCount)
			bad := append(hdr[:8:8], 0, 2, 0xc3, 0x28)
			h.closes(frame(bad, []byte{0xff, 0xff, 0, 0, 0, 0}), headerCount)
		}, tests: []string{"internal/wire.TestDecodeRequestBadInput"}},
		{id: "W14", input: "an array or string length beyond the frame, or negative where not nullable", live: func(t *testing.T, h *hostileNode) {
			// BeginQuorumEpoch v0: cluster id (nullable string), then the
			// topics array.
			hdr := headerV1(wire.KeyBeginQuorumEpoch, 0)
			h.closes(frame(hdr, []byte{0xff, 0xff}, []byte{0x7f, 0xff, 0xff, 0xff}), bodyCount)
			h.closes(frame(hdr, []byte{0xff, 0xff}, []byte{0, 0, 0, 1}, []byte{0xff, 0xfb}), bodyCount)
		}, tests: []string{"internal/wire.TestDecodeRequestBadInput", "metadata.TestDecodeAllocatesWithinInput"}},
		{id: "W15", input: "a varint longer than allowed", live: func(t *testing.T, h *hostileNode) {
			// DescribeQuorum v0 is flexible: its header ends in tagged
			// fields, whose count is an unsigned varint.
			h.closes(frame(headerV1(wire.KeyDescribeQuorum, 0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), anyInvalid)
		}},
		{id: "W16", input: "an unknown tagged field; one whose size runs past the frame", live: func(t *testing.T, h *hostileNode) {
			req := describeQuorumRequest()
			b := encode(t, req)
			// The header's tagged fields are the byte after the client id
			// "h": one unknown tag 99 of 3 bytes is skipped.
			at := 4 + 8 + 3
			tagged := append(append(b[:at:at], 1, 99, 3, 'x', 'y', 'z'), b[at+1:]...)
			binary.BigEndian.PutUint32(tagged, uint32(len(tagged)-4))
			h.answersBytes(tagged, req, served)
			past := append(append(b[:at:at], 1, 99, 0x7f), 'x')
			h.closes(frame(past[4:]), anyInvalid)
		}},
		{id: "W17", input: "trailing bytes after a valid body (ignored, as Kafka does)", live: func(t *testing.T, h *hostileNode) {
			req := describeQuorumRequest()
			b := append(encode(t, req), 1, 2, 3, 4)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			h.answersBytes(b, req, served)
		}},
		{id: "W18", input: "a request before SASL authentication",
			tests: []string{"raft.TestSecurityCriterion", "internal/transport.TestSASLRequestsOutOfOrder"}},
		{id: "W19", input: "an authentication failure (delayed, then closed)",
			tests: []string{"raft.TestHostileSASLListener", "internal/transport.TestSASLPlainRefusesBadCredentials"}},
		{id: "W20", input: "a SCRAM final message with a wrong nonce or proof",
			tests: []string{"internal/transport.TestSCRAMNonce", "internal/transport.TestSCRAMKgo"}},
		{id: "W21", input: "an authenticated principal without the operation",
			tests: []string{"raft.TestSecurityCriterion", "raft.TestAuthzSSLClusterOperations", "raft.TestAuthzRefusalShapes"}},
		{id: "W22", input: "a wrong cluster id (another, or empty); null accepted", live: func(t *testing.T, h *hostileNode) {
			for _, cid := range []string{"another-cluster", ""} {
				req := kraftRequest(t, h, fetchFrom(h)).(*kmsg.FetchRequest)
				req.ClusterID = &cid
				h.answers(req, wantCodes(fetchCodes, kerr.InconsistentClusterID.Code, -1))
				vote := kraftRequest(t, h, &kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 2}, Voter: kraft.ReplicaKey{ID: 1}, ReplicaEpoch: 100}).(*kmsg.VoteRequest)
				vote.ClusterID = &cid
				h.answers(vote, wantCodes(voteCodes, kerr.InconsistentClusterID.Code, -1))
			}
			req := kraftRequest(t, h, &kraft.FetchRequest{Replica: kraft.ReplicaKey{ID: kraft.NoNode}, CurrentLeaderEpoch: kraft.Epoch(h.c.QuorumState().Epoch), MaxBytes: 1 << 20, HighWatermark: -1}).(*kmsg.FetchRequest)
			req.ClusterID = nil
			h.answers(req, wantCodes(fetchCodes, 0, 0))
		}, tests: []string{"raft.TestWireClusterIDChecked"}},
		{id: "W23", input: "another topic, partition or topic id", live: func(t *testing.T, h *hostileNode) {
			f := kraftRequest(t, h, fetchFrom(h)).(*kmsg.FetchRequest)
			f.Topics[0].TopicID = [16]byte{1}
			h.answers(f, wantCodes(fetchCodes, kerr.InvalidRequest.Code, -1))
			v := kraftRequest(t, h, &kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 2}, Voter: kraft.ReplicaKey{ID: 1}, ReplicaEpoch: 100}).(*kmsg.VoteRequest)
			v.Topics[0].Topic = "other"
			h.answers(v, wantCodes(voteCodes, kerr.InvalidRequest.Code, -1))
			fs := kraftRequest(t, h, &kraft.FetchSnapshotRequest{Replica: kraft.ReplicaKey{ID: 2}, CurrentLeaderEpoch: kraft.Epoch(h.c.QuorumState().Epoch), SnapshotID: kraft.OffsetAndEpoch{Offset: 1, Epoch: 1}, MaxBytes: 1 << 20}).(*kmsg.FetchSnapshotRequest)
			fs.Topics[0].Partitions[0].Partition = 1
			h.answers(fs, wantCodes(fetchSnapshotCodes, 0, kerr.UnknownTopicOrPartition.Code))
		}, tests: []string{"raft.TestWireDescribeQuorumAndApiVersions"}},
		{id: "W24", input: "a Fetch with a negative offset or epoch, or a last fetched epoch above its epoch", live: func(t *testing.T, h *hostileNode) {
			for name, edit := range map[string]func(*kraft.FetchRequest){
				"negative fetch offset":       func(f *kraft.FetchRequest) { f.FetchOffset = -1 },
				"negative last fetched epoch": func(f *kraft.FetchRequest) { f.LastFetchedEpoch = -1 },
				"last fetched epoch above":    func(f *kraft.FetchRequest) { f.LastFetchedEpoch = f.CurrentLeaderEpoch + 1 },
			} {
				t.Run(name, func(t *testing.T) {
					m := fetchFrom(h)
					edit(m)
					h.answers(kraftRequest(t, h, m), wantCodes(fetchCodes, 0, kerr.InvalidRequest.Code))
				})
			}
			t.Run("negative max wait", func(t *testing.T) {
				req := kraftRequest(t, h, fetchFrom(h)).(*kmsg.FetchRequest)
				req.MaxWaitMillis = -1
				h.answers(req, wantCodes(fetchCodes, 0, kerr.InvalidRequest.Code))
			})
		}, tests: []string{"internal/kraft.TestLeaderFetchValidation"}},
		{id: "W25", input: "a request epoch above ours; a stale one", live: func(t *testing.T, h *hostileNode) {
			m := fetchFrom(h)
			m.CurrentLeaderEpoch++
			h.answers(kraftRequest(t, h, m), wantCodes(fetchCodes, 0, kerr.UnknownLeaderEpoch.Code))
			m = fetchFrom(h)
			m.CurrentLeaderEpoch--
			m.LastFetchedEpoch, m.FetchOffset = m.CurrentLeaderEpoch, 0
			h.answers(kraftRequest(t, h, m), wantCodes(fetchCodes, 0, kerr.FencedLeaderEpoch.Code))
			st := h.c.QuorumState()
			bqe := kraftRequest(t, h, &kraft.BeginQuorumEpochRequest{Voter: kraft.ReplicaKey{ID: 1}, LeaderID: 2, LeaderEpoch: kraft.Epoch(st.Epoch - 1)})
			h.answers(bqe, wantCodes(beginQuorumEpochCodes, 0, kerr.FencedLeaderEpoch.Code))
		}},
		{id: "W26", input: "a Vote with a wrong voter directory id; one from a replica that is not a voter", live: func(t *testing.T, h *hostileNode) {
			st := h.c.QuorumState()
			vote := func(from, to kraft.ReplicaKey) kmsg.Request {
				return kraftRequest(t, h, &kraft.VoteRequest{Replica: from, Voter: to, ReplicaEpoch: kraft.Epoch(st.Epoch),
					LastOffsetEpoch: kraft.Epoch(st.Epoch - 1), LastOffset: kraft.Offset(st.LogEndOffset)})
			}
			h.answers(vote(kraft.ReplicaKey{ID: 2}, kraft.ReplicaKey{ID: 1, DirectoryID: kraft.UUID{0xba, 0xd}}), wantCodes(voteCodes, 0, kerr.InvalidVoterKey.Code))
			// KIP-853: a voter does not refuse a candidate it does not
			// know (its voter set may be behind), as Kafka's
			// validateVoterOnlyRequest does not; a leader grants nothing.
			h.answers(vote(kraft.ReplicaKey{ID: 7}, kraft.ReplicaKey{ID: 1}), wantCodes(voteCodes, 0, 0))
		}, tests: []string{"raft.TestAuthzSSLClusterOperations"}},
		{id: "W27", input: "a Vote addressed to another voter", live: func(t *testing.T, h *hostileNode) {
			st := h.c.QuorumState()
			v := kraftRequest(t, h, &kraft.VoteRequest{Replica: kraft.ReplicaKey{ID: 2}, Voter: kraft.ReplicaKey{ID: 5}, ReplicaEpoch: kraft.Epoch(st.Epoch),
				LastOffsetEpoch: kraft.Epoch(st.Epoch - 1), LastOffset: kraft.Offset(st.LogEndOffset)})
			h.answers(v, wantCodes(voteCodes, 0, kerr.InvalidVoterKey.Code))
		}},
		{id: "W28", input: "FetchSnapshot of an unknown snapshot, or past its end", live: func(t *testing.T, h *hostileNode) {
			epoch := kraft.Epoch(h.c.QuorumState().Epoch)
			fs := kraftRequest(t, h, &kraft.FetchSnapshotRequest{Replica: kraft.ReplicaKey{ID: 2}, CurrentLeaderEpoch: epoch, SnapshotID: kraft.OffsetAndEpoch{Offset: 1000, Epoch: epoch}, MaxBytes: 1 << 20})
			h.answers(fs, wantCodes(fetchSnapshotCodes, 0, kerr.SnapshotNotFound.Code))
			id, err := h.c.TriggerSnapshot(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			fs = kraftRequest(t, h, &kraft.FetchSnapshotRequest{Replica: kraft.ReplicaKey{ID: 2}, CurrentLeaderEpoch: epoch, SnapshotID: kraft.OffsetAndEpoch{Offset: kraft.Offset(id.EndOffset), Epoch: kraft.Epoch(id.Epoch)}, Position: 1 << 40, MaxBytes: 1 << 20})
			h.answers(fs, wantCodes(fetchSnapshotCodes, 0, kerr.PositionOutOfRange.Code))
		}, tests: []string{"internal/kraft.TestLeaderFetchSnapshotAnswers"}},
		{id: "W29", input: "a leader-only request to a follower", live: func(t *testing.T, _ *hostileNode) {
			c := newTestCluster(t, 3)
			leader := c.leader()
			f := c.node(c.follower(leader))
			st := f.QuorumState()
			m := &kraft.FetchRequest{Replica: kraft.ReplicaKey{ID: 7}, CurrentLeaderEpoch: kraft.Epoch(st.Epoch), FetchOffset: 0, LastFetchedEpoch: 0, MaxBytes: 1 << 20, HighWatermark: -1}
			req, err := wire.KmsgRequest(m, f.eng.clusterID)
			if err != nil {
				t.Fatal(err)
			}
			req.SetVersion(17)
			before := f.QuorumState()
			conn := dialRaw(t, f.Addr())
			r := conn.call(1, req).(*kmsg.FetchResponse)
			top, part := fetchCodes(r)
			if top != 0 || part != kerr.NotLeaderForPartition.Code || NodeID(r.Topics[0].Partitions[0].CurrentLeader.LeaderID) != leader {
				t.Errorf("Fetch to a follower = %+v, want NOT_LEADER_OR_FOLLOWER naming %d", r, leader)
			}
			if after := f.QuorumState(); after.Epoch != before.Epoch || after.LeaderID != before.LeaderID {
				t.Errorf("the follower's quorum state changed: %+v, was %+v", after, before)
			}
		}, tests: []string{"raft.TestWireDescribeQuorumAndApiVersions", "raft.TestWireSubmitChange"}},
		{id: "W30", input: "pipelined requests beyond the in-flight limit",
			tests: []string{"internal/transport.TestBackPressure", "internal/transport.TestServerWritesInRequestOrder"}},
		{id: "W31", input: "a connection storm, from one address or many",
			tests: []string{"raft.TestConnectionStormAndSlowloris", "raft.TestStartEnforcesConnectionQuotas", "raft.TestStartEnforcesMaxConnections", "raft.TestStartEnforcesConnectionCreationRate", "internal/transport.TestMaxConnectionsPerIP", "internal/transport.TestCreationRateDelaysAccepts"}},
		{id: "W32", input: "a Fetch answer whose batch has a bad CRC or length",
			tests: []string{"raft.TestHeldFetchedBatch", "internal/recordbatch.TestFlippedBytesFailTheCRC"}},
		{id: "W33", input: "a fetched batch from an epoch above the fetch's",
			tests: []string{"internal/kraft.TestFollowerAppendsOnlyBatchesWithinItsEpochs"}},
		{id: "W34", input: "fetched batches not contiguous with the fetch offset",
			tests: []string{"internal/kraft.TestFollowerAppendsOnlyBatchesWithinItsEpochs"}},
		{id: "W35", input: "a diverging epoch below our high watermark",
			tests: []string{"internal/kraft.TestFollowerNeverTruncatesBelowHighWatermark"}},
		{id: "W36", input: "a compressed metadata batch; a decompression bomb",
			tests: []string{"internal/recordbatch.TestDecompressionBombIsTooLarge"}},
		{id: "W37", input: "an oversized response frame",
			tests: []string{"internal/transport.TestPeerClosesOnOversizedResponse"}},
	}
}

// TestHostileInputs runs every row of the catalogue with a live check
// against one lone controller's real listener (W29 against a follower of
// three), each on fresh connections, and checks after each that nothing
// changed; TestHostileRowsNameTestsThatExist checks the rest.
func TestHostileInputs(t *testing.T) {
	h := startHostileNode(t, nil)
	for _, r := range hostileRows() {
		if r.live == nil {
			continue
		}
		t.Run(r.id, func(t *testing.T) {
			h := &hostileNode{t: t, c: h.c}
			r.live(t, h)
		})
	}
}

// TestHostileRowsNameTestsThatExist: the catalogue is W1 to W37 in
// order, and every row has a live check or names tests, each of which
// exists where it says.
func TestHostileRowsNameTestsThatExist(t *testing.T) {
	found := map[string][]string{}
	rows := hostileRows()
	if len(rows) != 37 {
		t.Fatalf("%d rows, want W1 to W37", len(rows))
	}
	for i, r := range rows {
		if want := fmt.Sprintf("W%d", i+1); r.id != want {
			t.Errorf("row %d is %s, want %s", i, r.id, want)
		}
		if r.live == nil && len(r.tests) == 0 {
			t.Errorf("%s has neither a live check nor a test", r.id)
		}
		for _, name := range r.tests {
			dir, fn, _ := strings.Cut(name, ".")
			if _, ok := found[dir]; !ok {
				path := "."
				if dir != "raft" {
					path = filepath.Join("..", filepath.FromSlash(dir))
				}
				found[dir] = testFuncs(t, path)
			}
			if !slices.Contains(found[dir], fn) {
				t.Errorf("%s names %s, which does not exist", r.id, name)
			}
		}
	}
}
