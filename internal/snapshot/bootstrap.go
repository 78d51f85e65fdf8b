package snapshot

import (
	"errors"
	"fmt"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/vfs"
)

// WriteBootstrapCheckpoint writes bootstrap.checkpoint into log directory
// dir with the given bootstrap record values (FeatureLevelRecord
// metadata.version first, then the other features sorted by name, then
// SCRAM records; Kafka's BootstrapMetadata.fromVersions and
// BootstrapDirectory), every batch stamped with now. It is
// [CreateBootstrap], one Append and Freeze.
func WriteBootstrapCheckpoint(fsys vfs.FS, dir string, now int64, values [][]byte) error {
	w, err := CreateBootstrap(fsys, dir, now, WriterOptions{})
	if err != nil {
		return err
	}
	if err := w.Append(now, values...); err != nil {
		return errors.Join(err, w.Abort())
	}
	return w.Freeze(now)
}

// WriteBootstrapSnapshot writes the 0-0 bootstrap snapshot of a dynamic
// quorum into the partition directory dir, as kafka-storage format does with
// --standalone or --initial-controllers (Kafka's Formatter, KIP-853): a
// header batch with SnapshotHeader{formatTime}, KRaftVersion 1 and the
// initial voters, then the footer, both stamped with formatTime. unique names
// the temporary file (see [PartFileName]).
func WriteBootstrapSnapshot(fsys vfs.FS, dir string, unique uint64, formatTime int64, voters *control.VotersRecord) error {
	if voters == nil || len(voters.Voters) == 0 {
		return fmt.Errorf("snapshot: bootstrap snapshot in %s: no initial voters", dir)
	}
	h := Header{LastContainedLogTimestamp: formatTime, KRaftVersion: 1, Voters: voters}
	w, err := Create(fsys, dir, Bootstrap, unique, h, formatTime, WriterOptions{})
	if err != nil {
		return err
	}
	return w.Freeze(formatTime)
}
