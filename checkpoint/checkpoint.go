package checkpoint

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/metadata"
)

// BootstrapFile is the name of the bootstrap checkpoint kafka-storage
// format writes into every log directory.
const BootstrapFile = snapshot.BootstrapFile

// Default limits of a zero [Decoder].
const (
	// DefaultMaxBatchBytes bounds one encoded batch: 64 MiB, eight times
	// the 8 MiB batches Kafka writes.
	DefaultMaxBatchBytes = snapshot.DefaultMaxReadBatchBytes
	// DefaultMaxDecompressedBytes bounds the records of one compressed
	// batch once decompressed: 64 MiB.
	DefaultMaxDecompressedBytes = recordbatch.DefaultMaxDecompressedSize
)

var (
	// ErrCorrupt is matched by every *[CorruptError].
	ErrCorrupt = snapshot.ErrCorrupt
	// ErrTruncated is matched by a *[CorruptError] for bytes that end
	// before the checkpoint does: a torn or partial file.
	ErrTruncated = snapshot.ErrTruncated
	// ErrNoMetadataVersion: a bootstrap checkpoint without a
	// FeatureLevelRecord for metadata.version above 0. Kafka refuses to
	// load one (BootstrapMetadata.fromRecords), so it is refused both
	// ways.
	ErrNoMetadataVersion = errors.New("checkpoint: bootstrap records set no metadata.version")
)

// CorruptError reports bytes that are not a valid checkpoint: where and
// why. It matches [ErrCorrupt], and [ErrTruncated] when the bytes end
// early; errors.As reaches its cause, such as a
// *metadata.UnknownAPIKeyError for a record that does not decode.
type CorruptError struct {
	// Pos is the byte position where the problem was found: the start
	// of the offending batch, or of the offending record when the batch
	// layer could tell.
	Pos int64
	// Reason says what is wrong.
	Reason string
	// Truncated is set when the bytes end before the checkpoint does.
	Truncated bool

	report *snapshot.CorruptError // the verifier's, which matches the sentinels
}

// Error implements error.
func (e *CorruptError) Error() string { return e.report.Error() }

// Unwrap returns the verifier's report, which matches ErrCorrupt,
// ErrTruncated and the cause.
func (e *CorruptError) Unwrap() error { return e.report }

func newCorruptError(r *snapshot.CorruptError) *CorruptError {
	return &CorruptError{Pos: r.Pos, Reason: r.Reason, Truncated: r.Truncated, report: r}
}

// Endpoint is one listener of a voter (an endpoint of Kafka's
// VotersRecord).
type Endpoint struct {
	// Name is the listener name; Kafka writes it upper case.
	Name string
	Host string
	Port uint16
}

// Voter is one member of a KIP-853 voter set (a voter of Kafka's
// VotersRecord).
type Voter struct {
	// ID is the voter's node.id.
	ID int32
	// DirectoryID is the directory.id of the voter's metadata log
	// directory.
	DirectoryID [16]byte
	// Endpoints are the voter's controller listeners.
	Endpoints []Endpoint
	// MinKRaftVersion and MaxKRaftVersion are the kraft.version range the
	// voter supports.
	MinKRaftVersion, MaxKRaftVersion int16
}

// Control is the control state of a snapshot: what its header batch
// says before the metadata records (KIP-630's SnapshotHeader, KIP-853's
// KRaftVersion and VotersRecord).
type Control struct {
	// LastContainedLogTimestamp is the append time (ms) of the last log
	// record the snapshot covers; time-based retention reads it.
	LastContainedLogTimestamp int64
	// KRaftVersion is the finalized kraft.version at the snapshot's end
	// offset. Kafka writes a KRaftVersion record only when it is at least
	// 1; decoding reports 0 when the record is absent.
	KRaftVersion int16
	// Voters is the voter set at the snapshot's end offset. nil means the
	// snapshot has no VotersRecord; a non-nil empty slice is a
	// VotersRecord with no voters. It must be nil when KRaftVersion is 0.
	Voters []Voter
}

// BatchTimes are the timestamps (ms) of a checkpoint's batches. Kafka
// stamps each batch, and every record in it, with the wall-clock time at
// which it opened the batch; they are the only bytes that differ between
// two checkpoints of the same content. Encoding with the times decoding
// reported gives Kafka's bytes back.
type BatchTimes struct {
	// Header stamps the header control batch.
	Header int64
	// Records stamps the data batches. Decoding reports the first data
	// batch's time (0 when there is none); encoding stamps every data
	// batch with it. Kafka writes one data batch for up to 8 MiB of
	// records.
	Records int64
	// Footer stamps the footer control batch.
	Footer int64
}

// Snapshot is a KRaft metadata snapshot: the contents of a
// <end offset>-<epoch>.checkpoint file of __cluster_metadata-0.
type Snapshot struct {
	// Epoch is the epoch of the snapshot id, which every batch carries as
	// its partitionLeaderEpoch. The end offset is in the file name only
	// (see [FileName]).
	Epoch int32
	// Control is the header's control state.
	Control Control
	// Records are the metadata records, in file order. Each is encoded at
	// its own version (Record.GetVersion).
	Records []metadata.Record
	// Times are the batch timestamps.
	Times BatchTimes
}

// Bootstrap is a bootstrap checkpoint: the contents of the
// bootstrap.checkpoint kafka-storage format writes.
type Bootstrap struct {
	// Records are the bootstrap records. Kafka writes the
	// FeatureLevelRecord for metadata.version first, then one per other
	// feature above level 0 sorted by name (never kraft.version), then
	// the SCRAM credentials of --add-scram; encoding keeps the order
	// given. A FeatureLevelRecord for metadata.version above 0 is
	// required.
	Records []metadata.Record
	// Times are the batch timestamps.
	Times BatchTimes
}

// EncodeSnapshot returns the bytes of s as Kafka writes a snapshot file
// (RecordsSnapshotWriter): a header control batch with SnapshotHeader,
// then KRaftVersion and VotersRecord when kraft.version is at least 1,
// data batches of at most 8 MiB holding the records, and a footer
// control batch with SnapshotFooter. It fails for a negative epoch,
// voters at kraft.version 0, or a record that does not encode.
func EncodeSnapshot(s *Snapshot) ([]byte, error) {
	if s.Epoch < 0 {
		return nil, fmt.Errorf("checkpoint: encode snapshot: negative epoch %d", s.Epoch)
	}
	values, err := encodeRecords(s.Records)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encode snapshot: %w", err)
	}
	h := snapshot.Header{
		LastContainedLogTimestamp: s.Control.LastContainedLogTimestamp,
		KRaftVersion:              s.Control.KRaftVersion,
		Voters:                    votersRecord(s.Control.Voters),
	}
	b, err := snapshot.Encode(kraft.OffsetAndEpoch{Epoch: kraft.Epoch(s.Epoch)}, h, internalTimes(s.Times), values, snapshot.WriterOptions{})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encode snapshot: %w", err)
	}
	return b, nil
}

// EncodeBootstrap returns the bytes of b as kafka-storage format writes
// bootstrap.checkpoint (BootstrapDirectory and BatchFileWriter): epoch 0,
// a header control batch with SnapshotHeader{LastContainedLogTimestamp
// 0}, data batches with the records in their order, and the footer. It
// fails with [ErrNoMetadataVersion] when no record sets metadata.version.
func EncodeBootstrap(b *Bootstrap) ([]byte, error) {
	if !hasMetadataVersion(b.Records) {
		return nil, fmt.Errorf("checkpoint: encode bootstrap: %w", ErrNoMetadataVersion)
	}
	values, err := encodeRecords(b.Records)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encode bootstrap: %w", err)
	}
	out, err := snapshot.EncodeBootstrap(internalTimes(b.Times), values)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encode bootstrap: %w", err)
	}
	return out, nil
}

// Decoder decodes checkpoints within limits. The zero Decoder applies
// [DefaultMaxBatchBytes] and [DefaultMaxDecompressedBytes].
//
// Decoding allocates at most a constant multiple of the input size plus
// MaxDecompressedBytes: each batch is read into one buffer no larger
// than the input, a compressed batch decompresses to at most
// MaxDecompressedBytes, and each record decodes into a bounded multiple
// of its own size. A length field, however large it claims to be, never
// makes it allocate more.
type Decoder struct {
	// MaxBatchBytes bounds the encoded size of one batch; 0 means
	// DefaultMaxBatchBytes. A larger batch is corrupt.
	MaxBatchBytes int
	// MaxDecompressedBytes bounds the decompressed records of one
	// compressed batch; 0 means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
}

// DecodeSnapshot is Decoder{}.DecodeSnapshot.
func DecodeSnapshot(data []byte) (*Snapshot, error) { return Decoder{}.DecodeSnapshot(data) }

// DecodeBootstrap is Decoder{}.DecodeBootstrap.
func DecodeBootstrap(data []byte) (*Bootstrap, error) { return Decoder{}.DecodeBootstrap(data) }

// DecodeSnapshot decodes the bytes of a snapshot file. It verifies all
// of them before it decodes a record, as a controller does before it
// loads a snapshot: every batch complete, with a correct CRC-32C and the
// same partitionLeaderEpoch (the snapshot epoch); offsets contiguous
// from 0; a header batch starting with SnapshotHeader, optionally
// followed by KRaftVersion and then VotersRecord; data batches of framed
// metadata records; and a footer batch ending with SnapshotFooter, with
// nothing after it. Control records of unknown types are skipped, as
// Kafka does. Any violation, and a record that does not decode, is a
// *[CorruptError].
//
// The epoch is read from the first batch; a caller that found the bytes
// under a snapshot's name should compare it with the name's.
func (d Decoder) DecodeSnapshot(data []byte) (*Snapshot, error) {
	epoch := int32(0)
	if h, err := recordbatch.PeekHeader(data); err == nil && h.PartitionLeaderEpoch > 0 {
		// A bad first batch is reported by the verification below.
		epoch = h.PartitionLeaderEpoch
	}
	r, recs, err := d.decode("snapshot", data, kraft.OffsetAndEpoch{Epoch: kraft.Epoch(epoch)})
	if err != nil {
		return nil, err
	}
	h := r.Header()
	return &Snapshot{
		Epoch: epoch,
		Control: Control{
			LastContainedLogTimestamp: h.LastContainedLogTimestamp,
			KRaftVersion:              h.KRaftVersion,
			Voters:                    voters(h.Voters),
		},
		Records: recs,
		Times:   publicTimes(r.Times()),
	}, nil
}

// DecodeBootstrap decodes the bytes of a bootstrap.checkpoint, with the
// checks of [Decoder.DecodeSnapshot] at epoch 0; its control records say
// nothing a bootstrap needs and are not returned. It fails with
// [ErrNoMetadataVersion] when no record sets metadata.version, as Kafka
// and the controller do.
func (d Decoder) DecodeBootstrap(data []byte) (*Bootstrap, error) {
	r, recs, err := d.decode("bootstrap", data, snapshot.Bootstrap)
	if err != nil {
		return nil, err
	}
	if !hasMetadataVersion(recs) {
		return nil, fmt.Errorf("checkpoint: decode bootstrap: %w", ErrNoMetadataVersion)
	}
	return &Bootstrap{Records: recs, Times: publicTimes(r.Times())}, nil
}

// decode verifies data as snapshot id and decodes its metadata records.
func (d Decoder) decode(what string, data []byte, id kraft.OffsetAndEpoch) (*snapshot.Reader, []metadata.Record, error) {
	if d.MaxBatchBytes < 0 || d.MaxDecompressedBytes < 0 {
		return nil, nil, fmt.Errorf("checkpoint: decode %s: negative limit in %+v", what, d)
	}
	r, err := snapshot.OpenBytes("input", data, id, snapshot.ReadOptions{
		MaxBatchBytes:       d.MaxBatchBytes,
		MaxDecompressedSize: d.MaxDecompressedBytes,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: decode %s: %w", what, publicError(err))
	}
	defer func() { _ = r.Close() }() // closing bytes cannot fail
	// Open counted the records, each at least a few bytes of data, so
	// the slice is bounded by the input.
	recs := make([]metadata.Record, 0, r.Records())
	for r.Next() {
		b := r.Batch()
		for i := range b.Records {
			m, err := metadata.Decode(b.Records[i].Value)
			if err != nil {
				return nil, nil, fmt.Errorf("checkpoint: decode %s: %w", what, newCorruptError(&snapshot.CorruptError{Path: r.Path(),
					Pos: r.Pos(), Reason: fmt.Sprintf("record at offset %d", b.BaseOffset+int64(b.Records[i].OffsetDelta)), Err: err}))
			}
			recs = append(recs, m)
		}
	}
	if err := r.Err(); err != nil {
		panic(fmt.Sprintf("checkpoint: invariant: verified bytes in memory failed to read: %v", err))
	}
	return r, recs, nil
}

// publicError turns the snapshot package's corruption report into a
// *CorruptError.
func publicError(err error) error {
	var ce *snapshot.CorruptError
	if errors.As(err, &ce) {
		return newCorruptError(ce)
	}
	return err
}

// encodeRecords frames each record at its own version.
func encodeRecords(recs []metadata.Record) ([][]byte, error) {
	values := make([][]byte, len(recs))
	for i, r := range recs {
		if r == nil {
			return nil, fmt.Errorf("record %d is nil", i)
		}
		b, err := metadata.Encode(r)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, r.APIKey(), err)
		}
		values[i] = b
	}
	return values, nil
}

// hasMetadataVersion reports whether recs set metadata.version above 0.
func hasMetadataVersion(recs []metadata.Record) bool {
	for _, r := range recs {
		if fl, ok := r.(*metadata.FeatureLevelRecord); ok && fl.Name == metadata.FeatureMetadataVersion && fl.FeatureLevel > 0 {
			return true
		}
	}
	return false
}

func internalTimes(t BatchTimes) snapshot.BatchTimes {
	return snapshot.BatchTimes{Header: t.Header, Data: t.Records, Footer: t.Footer}
}

func publicTimes(t snapshot.BatchTimes) BatchTimes {
	return BatchTimes{Header: t.Header, Records: t.Data, Footer: t.Footer}
}

// votersRecord returns the VotersRecord of vs (version 0, the only one
// Kafka writes), nil for nil.
func votersRecord(vs []Voter) *control.VotersRecord {
	if vs == nil {
		return nil
	}
	r := control.NewVotersRecord()
	r.Voters = make([]control.VotersRecordVoter, len(vs))
	for i, v := range vs {
		cv := control.VotersRecordVoter{VoterId: v.ID, VoterDirectoryId: v.DirectoryID,
			Endpoints: make([]control.VotersRecordEndpoint, len(v.Endpoints))}
		cv.KRaftVersionFeature.MinSupportedVersion = v.MinKRaftVersion
		cv.KRaftVersionFeature.MaxSupportedVersion = v.MaxKRaftVersion
		for j, e := range v.Endpoints {
			cv.Endpoints[j] = control.VotersRecordEndpoint{Name: e.Name, Host: e.Host, Port: e.Port}
		}
		r.Voters[i] = cv
	}
	return r
}

// voters returns a copy of r's voters, nil for a nil r.
func voters(r *control.VotersRecord) []Voter {
	if r == nil {
		return nil
	}
	vs := make([]Voter, len(r.Voters))
	for i, cv := range r.Voters {
		v := Voter{ID: cv.VoterId, DirectoryID: cv.VoterDirectoryId,
			MinKRaftVersion: cv.KRaftVersionFeature.MinSupportedVersion,
			MaxKRaftVersion: cv.KRaftVersionFeature.MaxSupportedVersion,
			Endpoints:       make([]Endpoint, len(cv.Endpoints))}
		for j, e := range cv.Endpoints {
			v.Endpoints[j] = Endpoint{Name: e.Name, Host: e.Host, Port: e.Port}
		}
		vs[i] = v
	}
	return vs
}

// FileName returns the name of the snapshot that ends at endOffset (the
// offset after its last record) in epoch: "<20-digit end
// offset>-<10-digit epoch>.checkpoint", as Kafka names it. It fails for
// a negative offset or epoch.
func FileName(endOffset int64, epoch int32) (string, error) {
	id := kraft.OffsetAndEpoch{Offset: kraft.Offset(endOffset), Epoch: kraft.Epoch(epoch)}
	if !id.Valid() {
		return "", fmt.Errorf("checkpoint: snapshot id %d-%d: offset and epoch must be non-negative", endOffset, epoch)
	}
	return snapshot.FileName(id), nil
}

// ParseFileName returns the end offset and epoch of a complete snapshot's
// file name, the inverse of [FileName]. Names of snapshots being written
// (.checkpoint.part) or deleted (.checkpoint.deleted), and any other
// spelling, are refused.
func ParseFileName(name string) (endOffset int64, epoch int32, err error) {
	id, kind, err := snapshot.ParseFileName(name)
	if err != nil {
		return 0, 0, fmt.Errorf("checkpoint: %w", err)
	}
	if kind != snapshot.KindSnapshot {
		return 0, 0, fmt.Errorf("checkpoint: %s names a %s file, not a complete snapshot", name, kind)
	}
	return int64(id.Offset), int32(id.Epoch), nil
}
