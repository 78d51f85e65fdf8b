package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/vfs"
)

// RecoveryPointFileName is the name of Krabka's own file in the partition
// directory that records the recovery point: a synced log end offset,
// checkpointed by [Log.CheckpointRecoveryPoint] (periodically, by the
// runtime), at every segment roll, at Close and after recovery, and
// lowered before every truncation. It lags the synced offset by at most
// one checkpoint interval and never exceeds it. Kafka ignores the file (it
// matches none of the suffixes its LogLoader acts on).
const RecoveryPointFileName = "krabka-recovery-point"

// The recovery-point file holds two 32-byte slots written alternately in
// place, each
//
//	magic "KRP1" | sequence uint64 | offset int64 | reserved uint32 | crc32c uint32
//
// (big-endian; the CRC-32C covers the first 28 bytes). A checkpoint
// overwrites the older slot and fsyncs the file: no rename and no directory
// fsync. A torn slot write fails its CRC and the other slot, one checkpoint
// older, is used: a recovery point that lags is safe (it only protects
// less), one that runs ahead is not, and the slot only ever holds an
// offset whose data an earlier fsync made durable.
const (
	rpSlotSize = 32
	rpMagic    = "KRP1"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recoveryPoint is the open recovery-point file.
type recoveryPoint struct {
	path   string
	f      vfs.File
	seq    uint64
	offset int64
}

func encodeRPSlot(seq uint64, offset int64) []byte {
	b := make([]byte, rpSlotSize)
	copy(b, rpMagic)
	binary.BigEndian.PutUint64(b[4:], seq)
	binary.BigEndian.PutUint64(b[12:], uint64(offset))
	binary.BigEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

func decodeRPSlot(b []byte) (seq uint64, offset int64, ok bool) {
	if len(b) < rpSlotSize || string(b[:4]) != rpMagic {
		return 0, 0, false
	}
	if crc32.Checksum(b[:28], castagnoli) != binary.BigEndian.Uint32(b[28:]) {
		return 0, 0, false
	}
	offset = int64(binary.BigEndian.Uint64(b[12:]))
	if offset < 0 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[4:]), offset, true
}

// readRecoveryPoint returns the recovery point stored in dir, found=false
// when the file does not exist (a directory Kafka wrote), or a
// *CorruptionError when neither slot is valid.
func readRecoveryPoint(fsys vfs.FS, dir string) (offset int64, seq uint64, found bool, err error) {
	path := filepath.Join(dir, RecoveryPointFileName)
	data, err := readSmallFile(fsys, path, 2*rpSlotSize)
	if isNotExist(err) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("logstore: read recovery point %s: %w", path, err)
	}
	best := -1
	var bestSeq uint64
	var bestOff int64
	for i := 0; i+rpSlotSize <= len(data); i += rpSlotSize {
		s, o, ok := decodeRPSlot(data[i : i+rpSlotSize])
		if ok && (best < 0 || s > bestSeq) {
			best, bestSeq, bestOff = i, s, o
		}
	}
	if best < 0 {
		return 0, 0, false, &CorruptionError{Segment: path, Offset: -1, Reason: "recovery point file has no valid slot"}
	}
	return bestOff, bestSeq, true, nil
}

// createRecoveryPoint writes a fresh file holding offset in both slots,
// atomically, and opens it for in-place updates.
func createRecoveryPoint(fsys vfs.FS, dir string, seq uint64, offset int64) (*recoveryPoint, error) {
	path := filepath.Join(dir, RecoveryPointFileName)
	data := append(encodeRPSlot(seq, offset), encodeRPSlot(seq, offset)...)
	if err := writeFileAtomic(fsys, path, data); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("logstore: open recovery point %s: %w", path, err)
	}
	return &recoveryPoint{path: path, f: f, seq: seq, offset: offset}, nil
}

// set makes offset the durable recovery point: it overwrites the older slot
// and fsyncs the file.
func (rp *recoveryPoint) set(offset int64) error {
	seq := rp.seq + 1
	if _, err := rp.f.WriteAt(encodeRPSlot(seq, offset), int64(seq%2)*rpSlotSize); err != nil {
		return fmt.Errorf("logstore: write recovery point %s: %w", rp.path, err)
	}
	if err := rp.f.Sync(); err != nil {
		return fmt.Errorf("logstore: sync recovery point %s: %w", rp.path, err)
	}
	rp.seq, rp.offset = seq, offset
	return nil
}

func (rp *recoveryPoint) close() error { return rp.f.Close() }
