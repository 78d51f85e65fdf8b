package krafttest

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

func batch(base, last kraft.Offset, epoch kraft.Epoch) kraft.BatchInfo {
	return kraft.BatchInfo{BaseOffset: base, LastOffset: last, Epoch: epoch, KRaftVersion: -1, LeaderChange: kraft.LeaderChange{LeaderID: kraft.NoNode}}
}

// EndOffsetForEpoch follows Kafka's LeaderEpochFileCache.endOffsetFor:
// the latest epoch ends at the LEO, an older one where the next larger
// epoch starts, an unknown one at the start of the next larger epoch with
// the largest smaller epoch, and one above every epoch falls back to the log
// end (KafkaMetadataLog.endOffsetForEpoch: the cache answers nothing, so the
// log end offset and last fetched epoch are returned).
func TestMemLogEndOffsetForEpoch(t *testing.T) {
	l := &MemLog{}
	for _, b := range []kraft.BatchInfo{batch(0, 1, 1), batch(2, 4, 1), batch(5, 5, 3), batch(6, 8, 5)} {
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		epoch kraft.Epoch
		want  kraft.OffsetAndEpoch
	}{
		{5, kraft.OffsetAndEpoch{Offset: 9, Epoch: 5}},
		{3, kraft.OffsetAndEpoch{Offset: 6, Epoch: 3}},
		{4, kraft.OffsetAndEpoch{Offset: 6, Epoch: 3}},
		{2, kraft.OffsetAndEpoch{Offset: 5, Epoch: 1}},
		{1, kraft.OffsetAndEpoch{Offset: 5, Epoch: 1}},
		{0, kraft.OffsetAndEpoch{Offset: 0, Epoch: 0}},
		{6, kraft.OffsetAndEpoch{Offset: 9, Epoch: 5}},
	}
	for _, tt := range tests {
		if got := l.EndOffsetForEpoch(tt.epoch); got != tt.want {
			t.Errorf("EndOffsetForEpoch(%d) = %s, want %s", tt.epoch, got, tt.want)
		}
	}
}

// Below the log's first epoch, when the log starts at the earliest
// snapshot's end offset, the answer is that snapshot's id: it is where a
// follower whose log predates the snapshot diverges (KafkaMetadataLog).
func TestMemLogEndOffsetForEpochBelowSnapshot(t *testing.T) {
	l := &MemLog{Catalog: map[kraft.OffsetAndEpoch][]kraft.ReplicaKey{}}
	for _, b := range []kraft.BatchInfo{batch(0, 4, 2), batch(5, 9, 4)} {
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	id, err := l.CreateSnapshot(5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.EndOffsetForEpoch(3); got != id {
		t.Errorf("EndOffsetForEpoch(3) = %s, want the snapshot id %s", got, id)
	}
	if got, want := l.EndOffsetForEpoch(4), (kraft.OffsetAndEpoch{Offset: 10, Epoch: 4}); got != want {
		t.Errorf("EndOffsetForEpoch(4) = %s, want %s", got, want)
	}
}

// Snapshots move the log start
// and retire older snapshots; appends must continue the log.
func TestMemLogTruncateSnapshotAppend(t *testing.T) {
	l := &MemLog{Catalog: map[kraft.OffsetAndEpoch][]kraft.ReplicaKey{}}
	for _, b := range []kraft.BatchInfo{batch(0, 1, 1), batch(2, 4, 1), batch(5, 5, 2)} {
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append(batch(7, 7, 2)); err == nil {
		t.Error("append with a gap accepted")
	}
	if _, err := l.CreateSnapshot(2, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateSnapshot(5, 20); err != nil {
		t.Fatal(err)
	}
	if len(l.Snapshots) != 1 || l.Start != 5 || l.LastFetchedEpoch() != 2 {
		t.Errorf("after two snapshots: %d snapshots, start %d, last epoch %d; want 1, 5, 2", len(l.Snapshots), l.Start, l.LastFetchedEpoch())
	}
	if err := l.Truncate(4); err == nil {
		t.Error("truncation below the log start accepted")
	}
	if err := l.Truncate(5); err != nil || l.EndOffset() != 5 || l.LastFetchedEpoch() != 1 {
		t.Errorf("truncate to the log start: err %v, end %d, last epoch %d; want nil, 5, 1 (the snapshot's)", err, l.EndOffset(), l.LastFetchedEpoch())
	}
	for _, b := range []kraft.BatchInfo{batch(5, 7, 2), batch(8, 9, 2)} {
		if err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Truncate(9); err != nil || l.EndOffset() != 8 {
		t.Errorf("truncate inside a batch: err %v, end %d; want nil, 8 (the whole batch goes)", err, l.EndOffset())
	}
}
