package raft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// newKgoClient returns a franz-go client seeded with addr, the version of
// the API key in capKey capped at capMax (capKey < 0: no cap beyond what
// both sides support).
func newKgoClient(t *testing.T, addr string, capKey, capMax int16) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr)}
	if capKey >= 0 {
		v := kversion.Tip()
		v.SetMaxKeyVersion(capKey, capMax)
		opts = append(opts, kgo.MaxVersions(v))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// kmsgRecord is a record of a fetched batch as kmsg decodes it, with its
// absolute offset and whether it sits in a control batch.
type kmsgRecord struct {
	offset  int64
	epoch   int32
	control bool
	key     []byte
	value   []byte
}

// splitBatches decodes a Fetch answer's record bytes with kmsg alone:
// each whole batch (a trailing partial one is left out, as Kafka allows),
// its CRC-32C checked, each record read with kmsg.Record.
func splitBatches(t *testing.T, raw []byte) (recs []kmsgRecord, next int64) {
	t.Helper()
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	next = -1
	for len(raw) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size > len(raw) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			t.Fatalf("kmsg.RecordBatch: %v", err)
		}
		if got := int32(crc32.Checksum(raw[21:size], castagnoli)); got != b.CRC {
			t.Fatalf("batch at %d: CRC %08x, header says %08x", b.FirstOffset, uint32(got), uint32(b.CRC))
		}
		if b.Magic != 2 || b.Attributes&0x07 != 0 {
			t.Fatalf("batch at %d: magic %d, attributes %#x; want magic 2, uncompressed", b.FirstOffset, b.Magic, b.Attributes)
		}
		rest := b.Records
		for range b.NumRecords {
			length, n := binary.Varint(rest)
			if n <= 0 || int(length) > len(rest)-n {
				t.Fatalf("batch at %d: bad record length", b.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(rest[:n+int(length)]); err != nil {
				t.Fatalf("batch at %d: kmsg.Record: %v", b.FirstOffset, err)
			}
			rest = rest[n+int(length):]
			recs = append(recs, kmsgRecord{
				offset: b.FirstOffset + int64(r.OffsetDelta), epoch: b.PartitionLeaderEpoch,
				control: b.Attributes&0x20 != 0, key: r.Key, value: r.Value,
			})
		}
		if len(rest) != 0 {
			t.Fatalf("batch at %d: %d bytes after %d records", b.FirstOffset, len(rest), b.NumRecords)
		}
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		raw = raw[size:]
	}
	return recs, next
}

// TestKmsgClient: franz-go's client, an independent implementation of the
// Kafka protocol, talks to a 3-voter quorum over TCP. ApiVersions
// advertises exactly internal/wire's version table; DescribeQuorum names
// the leader, its epoch, the high watermark and the three voters; and an
// observer Fetch (replica id -1) at v17 and at v18 returns record batches
// that kmsg decodes and whose records decode, with metadata.Decode and
// internal/control, into exactly the leader's bootstrap records, what was
// submitted and the epoch's LeaderChange.
func TestKmsgClient(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	topic := topicRecord("orders")
	// The leader appended the bootstrap records (no bootstrap.checkpoint:
	// metadata.version at the latest level) before anything submitted.
	submitted := activationRecords([]metadata.Record{metadataVersionRecord()})
	bootstrapped := len(submitted)
	submitted = append(submitted, topic)
	for i := range int32(2) {
		p := metadata.NewPartitionRecord()
		p.TopicId, p.PartitionId = topic.(*metadata.TopicRecord).TopicId, i
		p.Replicas, p.Isr, p.Leader, p.LeaderEpoch, p.PartitionEpoch = []int32{1, 2}, []int32{1, 2}, 1, 0, 0
		submitted = append(submitted, p)
	}
	res := submit(t, c.node(leader), submitted[bootstrapped:]...)
	c.waitApplied(res.LastOffset + 1)
	addr := c.node(leader).Addr().String()
	cl := newKgoClient(t, addr, -1, 0)
	broker := cl.SeedBrokers()[0]

	// ApiVersions: every row of the version table, nothing else.
	av := askAPIVersions(t, broker)
	var got, want []string
	for _, k := range av.ApiKeys {
		got = append(got, fmt.Sprintf("%d:%d-%d", k.ApiKey, k.MinVersion, k.MaxVersion))
	}
	for _, a := range wire.SupportedAPIs() {
		want = append(want, fmt.Sprintf("%d:%d-%d", a.Key, a.Min, a.Max))
	}
	if av.ErrorCode != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ApiVersions v%d = error %d, keys %v; want keys %v", av.Version, av.ErrorCode, got, want)
	}

	// DescribeQuorum.
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = wire.MetadataTopic
	dt.Partitions = append(dt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, dt)
	dqr, err := dq.RequestWith(t.Context(), broker)
	if err != nil {
		t.Fatal(err)
	}
	if dqr.ErrorCode != 0 || len(dqr.Topics) != 1 || len(dqr.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum = %+v", dqr)
	}
	qp := dqr.Topics[0].Partitions[0]
	st := c.node(leader).QuorumState()
	if qp.ErrorCode != 0 || NodeID(qp.LeaderID) != leader || qp.LeaderEpoch != st.Epoch || qp.HighWatermark != st.HighWatermark || qp.HighWatermark <= res.LastOffset {
		t.Errorf("DescribeQuorum v%d: leader %d epoch %d hw %d; want leader %d epoch %d hw %d (past %d)",
			dqr.Version, qp.LeaderID, qp.LeaderEpoch, qp.HighWatermark, leader, st.Epoch, st.HighWatermark, res.LastOffset)
	}
	voters := map[int32]bool{}
	for _, v := range qp.CurrentVoters {
		voters[v.ReplicaID] = true
	}
	if len(qp.CurrentVoters) != 3 || !voters[1] || !voters[2] || !voters[3] {
		t.Errorf("DescribeQuorum voters = %+v, want 1, 2 and 3", qp.CurrentVoters)
	}

	wantValues := map[int64][]byte{}
	for i, r := range submitted {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		wantValues[res.LastOffset-int64(len(submitted)-1-i)] = b
	}
	for _, version := range []int16{17, 18} {
		t.Run(fmt.Sprintf("FetchV%d", version), func(t *testing.T) {
			cl := newKgoClient(t, addr, wire.KeyFetch, version)
			var values [][]byte
			var offsets []int64
			var leaderChanges []*control.LeaderChangeMessage
			for offset := int64(0); offset < qp.HighWatermark; {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.ReplicaState.ID = -1, -1
				req.MaxWaitMillis, req.MaxBytes = 500, 1<<20
				ft := kmsg.NewFetchRequestTopic()
				ft.TopicID = wire.MetadataTopicID
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.FetchOffset, fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = offset, qp.LeaderEpoch, 1<<20
				fp.LastFetchedEpoch = 0
				if len(offsets) > 0 || len(leaderChanges) > 0 {
					fp.LastFetchedEpoch = qp.LeaderEpoch
				}
				ft.Partitions = append(ft.Partitions, fp)
				req.Topics = append(req.Topics, ft)
				resp, err := req.RequestWith(t.Context(), cl.SeedBrokers()[0])
				if err != nil {
					t.Fatal(err)
				}
				if resp.Version != version {
					t.Fatalf("Fetch went out at v%d, want v%d", resp.Version, version)
				}
				if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("Fetch = %+v", resp)
				}
				p := resp.Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.HighWatermark != qp.HighWatermark || p.DivergingEpoch.Epoch != -1 || p.SnapshotID.Epoch != -1 {
					t.Fatalf("Fetch at %d: partition error %d, hw %d, diverging %+v, snapshot %+v", offset, p.ErrorCode, p.HighWatermark, p.DivergingEpoch, p.SnapshotID)
				}
				recs, next := splitBatches(t, p.RecordBatches)
				if next <= offset {
					t.Fatalf("Fetch at %d returned no whole batch", offset)
				}
				for _, r := range recs {
					if r.epoch > qp.LeaderEpoch {
						t.Errorf("record at %d in epoch %d, past the leader's %d", r.offset, r.epoch, qp.LeaderEpoch)
					}
					if r.control {
						msg, err := control.Decode(r.key, r.value)
						if err != nil {
							t.Fatalf("control record at %d: %v", r.offset, err)
						}
						if lc, ok := msg.(*control.LeaderChangeMessage); ok && r.epoch == qp.LeaderEpoch {
							leaderChanges = append(leaderChanges, lc)
						}
						continue
					}
					rec, err := metadata.Decode(r.value)
					if err != nil {
						t.Fatalf("metadata record at %d: %v", r.offset, err)
					}
					again, err := metadata.Encode(rec)
					if err != nil || !bytes.Equal(again, r.value) {
						t.Errorf("record at %d re-encodes differently (%v)", r.offset, err)
					}
					values, offsets = append(values, r.value), append(offsets, r.offset)
				}
				offset = next
			}
			if len(values) != len(submitted) {
				t.Fatalf("fetched %d metadata records at %v, want %d", len(values), offsets, len(submitted))
			}
			for i, off := range offsets {
				if !bytes.Equal(values[i], wantValues[off]) {
					t.Errorf("record at offset %d differs from the one submitted there", off)
				}
			}
			if len(leaderChanges) != 1 || NodeID(leaderChanges[0].LeaderId) != leader || len(leaderChanges[0].Voters) != 3 {
				t.Errorf("LeaderChange records of epoch %d = %+v, want one naming leader %d and 3 voters", qp.LeaderEpoch, leaderChanges, leader)
			}
		})
	}
}

// TestKmsgDescribeCluster: an admin client bootstrapping to the
// controllers (KIP-919) sends DescribeCluster with the controller
// endpoint type to any voter and learns the cluster id, the leader as
// controller id and every voter's endpoint; the broker endpoint type is
// refused as Kafka's controller refuses it.
func TestKmsgDescribeCluster(t *testing.T) {
	const clusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	c := newFormattedCluster(t, 3, clusterID)
	leader := c.leader()
	for id := NodeID(1); id <= 3; id++ {
		for _, version := range []int16{1, 2} {
			cl := newKgoClient(t, c.node(id).Addr().String(), wire.KeyDescribeCluster, version)
			req := kmsg.NewPtrDescribeClusterRequest()
			req.EndpointType = wire.EndpointTypeController
			req.IncludeClusterAuthorizedOperations = true
			resp, err := req.RequestWith(t.Context(), cl.SeedBrokers()[0])
			if err != nil {
				t.Fatal(err)
			}
			if resp.Version != version {
				t.Fatalf("DescribeCluster went out at v%d, want v%d", resp.Version, version)
			}
			if resp.ErrorCode != 0 || resp.EndpointType != wire.EndpointTypeController || resp.ClusterID != clusterID ||
				NodeID(resp.ControllerID) != leader || resp.ClusterAuthorizedOperations != wire.ClusterAuthorizedOperationsAll {
				t.Errorf("node %d: DescribeCluster v%d = error %d, endpoint type %d, cluster %q, controller %d, operations %d; want 0, 2, %q, %d, %d",
					id, resp.Version, resp.ErrorCode, resp.EndpointType, resp.ClusterID, resp.ControllerID, resp.ClusterAuthorizedOperations,
					clusterID, leader, wire.ClusterAuthorizedOperationsAll)
			}
			if len(resp.Brokers) != 3 {
				t.Fatalf("node %d: DescribeCluster lists %+v, want the 3 voters", id, resp.Brokers)
			}
			for i, b := range resp.Brokers {
				want := c.cfgs[i].QuorumVoters[i]
				if NodeID(b.NodeID) != want.ID || b.Host != want.Host || b.Port != int32(want.Port) || b.Rack != nil || b.IsFenced {
					t.Errorf("node %d: DescribeCluster node %d = %+v, want voter %+v", id, i, b, want)
				}
			}
		}
	}

	cl := newKgoClient(t, c.node(leader).Addr().String(), -1, 0)
	req := kmsg.NewPtrDescribeClusterRequest() // EndpointType defaults to brokers
	resp, err := req.RequestWith(t.Context(), cl.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.MismatchedEndpointType.Code || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
		t.Errorf("DescribeCluster for brokers = error %d %v, %d nodes; want MISMATCHED_ENDPOINT_TYPE and none", resp.ErrorCode, resp.ErrorMessage, len(resp.Brokers))
	}
}

// TestKmsgDescribeClusterSingleNode: a single node configured with port 0
// (ForTests) lists itself at the port it is bound to.
func TestKmsgDescribeClusterSingleNode(t *testing.T) {
	c := newTestCluster(t, 1)
	node := c.node(c.leader())
	cl := newKgoClient(t, node.Addr().String(), -1, 0)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = wire.EndpointTypeController
	resp, err := req.RequestWith(t.Context(), cl.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	port := int32(node.Addr().(*net.TCPAddr).Port)
	if resp.ErrorCode != 0 || resp.ControllerID != 1 || len(resp.Brokers) != 1 || resp.Brokers[0].Port != port {
		t.Errorf("DescribeCluster = error %d, controller %d, nodes %+v; want node 1 at port %d", resp.ErrorCode, resp.ControllerID, resp.Brokers, port)
	}
}
