package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

// diskDir is the metadata partition directory on each node's file system.
const diskDir = "/kraft/__cluster_metadata-0"

// disk is a node's storage in disk mode: the real log store (Kafka's
// segment layout, recovery point, torn-tail recovery) and the quorum-state
// file, on an in-memory file system whose Crash loses unsynced writes the
// way a power loss does. The node's memLog then mirrors what the log
// store holds: it is rebuilt from the store after every crash, so the
// core and the checker see exactly what recovery kept.
//
// Each batch is a data batch of as many records as the entry covers; the
// first record's value and the batch's base timestamp hold the payload id.
// Control content (LeaderChange, Voters) is not encoded: the simulator
// keeps it in [cluster.infos], keyed by the batch's offset, epoch and
// payload, and restores it when it reads the store back.
type disk struct {
	fs  *vfs.MemFS
	log *logstore.Log
	bld recordbatch.Builder
	buf []byte
	// syncs counts fsyncs: every checkpointEvery-th one also checkpoints
	// the recovery point, as the runtime does periodically, so that
	// crashes find it both current and trailing.
	syncs int
}

const checkpointEvery = 3

func diskOptions() logstore.Options {
	o := logstore.DefaultOptions()
	o.InternalSegmentBytes = 4096 // many segments: rolls and multi-segment recovery
	return o
}

func newDisk() (*disk, error) {
	d := &disk{fs: vfs.NewMem()}
	if _, err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// open opens (and recovers) the log store.
func (d *disk) open() (*logstore.RecoveryReport, error) {
	l, rep, err := logstore.Open(d.fs, diskDir, diskOptions())
	if err != nil {
		return rep, fmt.Errorf("open log store: %w", err)
	}
	d.log = l
	return rep, nil
}

type infoKey struct {
	base    kraft.Offset
	epoch   kraft.Epoch
	payload Payload
}

// encode returns the bytes of e's batch.
func (d *disk) encode(e Entry) ([]byte, error) {
	p := recordbatch.DefaultParams()
	p.BaseOffset = int64(e.Batch.BaseOffset)
	p.PartitionLeaderEpoch = int32(e.Batch.Epoch)
	d.bld.Reset(d.buf[:0], p)
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(e.Payload))
	ts := int64(e.Payload &^ controlBit)
	for i := range e.Batch.Records() {
		if i == 0 {
			d.bld.Append(ts, nil, v[:], nil)
		} else {
			d.bld.Append(ts, nil, nil, nil)
		}
	}
	b, err := d.bld.Finish()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", e, err)
	}
	d.buf = b
	return b, nil
}

func (d *disk) append(e Entry) error {
	b, err := d.encode(e)
	if err != nil {
		return err
	}
	if _, err := d.log.AppendAsFollower(b); err != nil {
		return fmt.Errorf("append %s: %w", e, err)
	}
	return nil
}

func (d *disk) truncate(t kraft.Offset) error { return d.log.Truncate(int64(t)) }

// setSnapshots tells the log store the mirror's earliest and latest
// snapshots, as the runtime does (its EndOffsetForEpoch and LastEpoch
// answer from them).
func (d *disk) setSnapshots(l *memLog) {
	if len(l.snaps) == 0 {
		return
	}
	d.log.SetEarliestSnapshot(l.snaps[0].id)
	d.log.SetLatestSnapshot(l.latest().id)
}

func (d *disk) sync() error {
	if _, err := d.log.Sync(); err != nil {
		return err
	}
	d.syncs++
	if d.syncs%checkpointEvery == 0 {
		if _, err := d.log.CheckpointRecoveryPoint(); err != nil {
			return err
		}
	}
	return nil
}

func (d *disk) writeState(st kraft.ElectionState) error {
	return logstore.WriteQuorumState(d.fs, diskDir, logstore.QuorumStateData{
		LeaderID: st.LeaderID, LeaderEpoch: int32(st.Epoch), VotedID: st.VotedKey.ID,
	})
}

func (d *disk) readState() (kraft.ElectionState, error) {
	qs, err := logstore.ReadQuorumState(d.fs, diskDir)
	if errors.Is(err, fs.ErrNotExist) {
		// Never written: the node has not moved from epoch 0.
		return kraft.ElectionState{LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}, nil
	}
	if err != nil {
		return kraft.ElectionState{}, err
	}
	return kraft.ElectionState{Epoch: kraft.Epoch(qs.LeaderEpoch), LeaderID: qs.LeaderID,
		VotedKey: kraft.ReplicaKey{ID: qs.VotedID}}, nil
}

// crash loses power: the file system keeps its durable state plus what
// mode lets survive, and the log store is reopened and recovered.
func (d *disk) crash(rng *rand.Rand, mode vfs.CrashMode) (*logstore.RecoveryReport, error) {
	d.fs.Crash(rng, mode)
	return d.open()
}

// read returns every batch in the store as entries, with the control
// content restored from infos.
func (d *disk) read(infos map[infoKey]kraft.BatchInfo) ([]Entry, error) {
	var out []Entry
	off := d.log.LogStartOffset()
	for off < d.log.LogEndOffset() {
		r, err := d.log.Read(off, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("read at %d: %w", off, err)
		}
		b := r.Batches
		if len(b) == 0 {
			return nil, fmt.Errorf("read at %d: no batches below the log end %d", off, d.log.LogEndOffset())
		}
		for len(b) > 0 {
			h, err := recordbatch.PeekHeader(b)
			if err != nil {
				return nil, fmt.Errorf("batch header at %d: %w", off, err)
			}
			size, err := recordbatch.TotalSize(b)
			if err != nil {
				return nil, err
			}
			batch, err := recordbatch.Parse(b[:size])
			if err != nil {
				return nil, fmt.Errorf("parse batch at %d: %w", h.BaseOffset, err)
			}
			p, err := payloadOf(batch)
			if err != nil {
				return nil, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
			}
			k := infoKey{kraft.Offset(h.BaseOffset), kraft.Epoch(h.PartitionLeaderEpoch), 0}
			info, ok := infos[infoKey{k.base, k.epoch, p}]
			if !ok {
				return nil, fmt.Errorf("batch at %d epoch %d payload %s was never written", h.BaseOffset, h.PartitionLeaderEpoch, p)
			}
			out = append(out, Entry{Batch: info, Payload: p})
			b = b[size:]
			off = h.BaseOffset + int64(h.LastOffsetDelta) + 1
		}
	}
	return out, nil
}

// payloadOf decodes the payload id from the first record's value and
// checks it against the base timestamp.
func payloadOf(b recordbatch.Batch) (Payload, error) {
	if len(b.Records) == 0 || len(b.Records[0].Value) != 8 {
		return 0, errors.New("no payload record")
	}
	p := Payload(binary.BigEndian.Uint64(b.Records[0].Value))
	if int64(p&^controlBit) != b.BaseTimestamp {
		return 0, fmt.Errorf("payload %s does not match the base timestamp %d", p, b.BaseTimestamp)
	}
	return p, nil
}

// storeView is the [kraft.LogView] a disk-mode core reads: offsets and
// epochs come from the log store itself; the voter history, which needs
// the control records' content, comes from the mirror.
type storeView struct{ n *simNode }

var _ kraft.LogView = storeView{}

// StartOffset implements [kraft.LogView].
func (v storeView) StartOffset() kraft.Offset { return kraft.Offset(v.n.disk.log.LogStartOffset()) }

// EndOffset implements [kraft.LogView].
func (v storeView) EndOffset() kraft.Offset { return kraft.Offset(v.n.disk.log.LogEndOffset()) }

// LastFetchedEpoch implements [kraft.LogView].
func (v storeView) LastFetchedEpoch() kraft.Epoch { return kraft.Epoch(v.n.disk.log.LastEpoch()) }

// EndOffsetForEpoch implements [kraft.LogView].
func (v storeView) EndOffsetForEpoch(e kraft.Epoch) kraft.OffsetAndEpoch {
	return v.n.disk.log.EndOffsetForEpoch(int32(e))
}

// LatestSnapshot implements [kraft.LogView] from the mirror's snapshots
// (the log store holds none).
func (v storeView) LatestSnapshot() (kraft.OffsetAndEpoch, bool) { return v.n.log.LatestSnapshot() }

// EarliestSnapshot implements [kraft.LogView] from the mirror.
func (v storeView) EarliestSnapshot() (kraft.OffsetAndEpoch, bool) { return v.n.log.EarliestSnapshot() }

// SnapshotSize implements [kraft.LogView] from the mirror.
func (v storeView) SnapshotSize(id kraft.OffsetAndEpoch) (int64, bool) {
	return v.n.log.SnapshotSize(id)
}

// VoterHistory implements [kraft.LogView] from the mirror.
func (v storeView) VoterHistory() []kraft.VoterSetAt { return v.n.log.VoterHistory() }

func (v storeView) LatestLeaderChange() (kraft.BatchInfo, bool) { return v.n.log.LatestLeaderChange() }

// checkStore compares what the log store answers with the mirror after an
// fsync: end offsets, last epoch, and the end offset of every epoch up to
// one past the last (the leader-epoch cache). A difference is a log store or
// simulator bug.
func checkStore(n *simNode) error {
	v := storeView{n}
	if got, want := v.EndOffset(), n.log.EndOffset(); got != want {
		return fmt.Errorf("node %d: log store ends at %d, the mirror at %d", n.id, got, want)
	}
	if got, want := v.StartOffset(), n.log.start; got != want {
		return fmt.Errorf("node %d: log store starts at %d, the mirror at %d", n.id, got, want)
	}
	if s := n.disk.log.SyncedOffset(); kraft.Offset(s) != n.log.EndOffset() {
		return fmt.Errorf("node %d: log store synced to %d after the fsync, the log ends at %d", n.id, s, n.log.EndOffset())
	}
	if got, want := v.LastFetchedEpoch(), n.log.LastFetchedEpoch(); got != want {
		return fmt.Errorf("node %d: log store last epoch %d, the mirror's %d", n.id, got, want)
	}
	for e := kraft.Epoch(0); e <= n.log.LastFetchedEpoch()+1; e++ {
		if got, want := v.EndOffsetForEpoch(e), n.log.EndOffsetForEpoch(e); got != want {
			return fmt.Errorf("node %d: log store EndOffsetForEpoch(%d) = %s, the mirror's %s", n.id, e, got, want)
		}
	}
	return nil
}
