package snapshot

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// noOp is the framed NoOpRecord v0 (KIP-835; framed as Kafka's
// AbstractApiMessageSerde frames every metadata record).
var noOp = []byte{0x01, 0x14, 0x00, 0x00}

// topicValue returns a framed TopicRecord v0: frame version 1, api key 2,
// version 0, then Name (compact string), TopicId (uuid) and an empty
// tagged-field section.
func topicValue(dst []byte, name string, id [16]byte) []byte {
	dst = append(dst, 0x01, 0x02, 0x00)
	dst = binary.AppendUvarint(dst, uint64(len(name)+1))
	dst = append(dst, name...)
	dst = append(dst, id[:]...)
	return append(dst, 0x00)
}

// partitionValue returns a framed PartitionRecord v0: frame version 1,
// api key 3, version 0, then PartitionId, TopicId, Replicas, Isr,
// RemovingReplicas, AddingReplicas (compact int32 arrays), Leader,
// LeaderEpoch, PartitionEpoch and an empty tagged-field section.
func partitionValue(dst []byte, topic [16]byte, partition int32, replicas []int32) []byte {
	dst = append(dst, 0x01, 0x03, 0x00)
	dst = binary.BigEndian.AppendUint32(dst, uint32(partition))
	dst = append(dst, topic[:]...)
	arr := func(v []int32) {
		dst = binary.AppendUvarint(dst, uint64(len(v)+1))
		for _, x := range v {
			dst = binary.BigEndian.AppendUint32(dst, uint32(x))
		}
	}
	arr(replicas)
	arr(replicas)
	arr(nil)
	arr(nil)
	dst = binary.BigEndian.AppendUint32(dst, uint32(replicas[0]))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	return append(dst, 0x00)
}

// testValues returns n distinct record values of varying sizes.
func testValues(n int) [][]byte {
	vals := make([][]byte, n)
	for i := range vals {
		var id [16]byte
		binary.BigEndian.PutUint64(id[8:], uint64(i/7+1))
		if i%7 == 0 {
			vals[i] = topicValue(nil, fmt.Sprintf("topic-%d", i), id)
		} else {
			vals[i] = partitionValue(nil, id, int32(i%7), []int32{1, 2, 3}[:1+i%3])
		}
	}
	return vals
}

// testVoters is a one-voter set as kafka-storage format --standalone
// writes it.
func testVoters() *control.VotersRecord {
	return &control.VotersRecord{Voters: []control.VotersRecordVoter{{
		VoterId:             1,
		VoterDirectoryId:    [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		Endpoints:           []control.VotersRecordEndpoint{{Name: "CONTROLLER", Host: "localhost", Port: 9093}},
		KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
	}}}
}

// writeSnapshot writes and freezes a snapshot of vals (appended in one
// call per group of group records) and returns its bytes.
func writeSnapshot(t testing.TB, m *vfs.MemFS, dir string, id kraft.OffsetAndEpoch, h Header, vals [][]byte, group int, o WriterOptions) []byte {
	t.Helper()
	mkdirDurable(t, m, dir)
	w, err := Create(m, dir, id, 7, h, 1000, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(vals); i += group {
		if err := w.Append(int64(2000+i), vals[i:min(i+group, len(vals))]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Freeze(9000); err != nil {
		t.Fatal(err)
	}
	data, err := m.ReadDurable(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readAll opens path and returns the header and all record values.
func readAll(fsys vfs.FS, path string) (Header, [][]byte, error) {
	r, err := Open(fsys, path, ReadOptions{})
	if err != nil {
		return Header{}, nil, err
	}
	defer r.Close()
	var vals [][]byte
	for r.Next() {
		for _, rec := range r.Batch().Records {
			vals = append(vals, append([]byte(nil), rec.Value...))
		}
	}
	return r.Header(), vals, r.Err()
}

// readers returns the number of open RangeReaders of snapshot id.
func (s *Store) readers(id kraft.OffsetAndEpoch) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refs[id]
}
