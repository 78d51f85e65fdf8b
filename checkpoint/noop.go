package checkpoint

import (
	"github.com/krabka-go/krabka/internal/kbin"
	"github.com/krabka-go/krabka/metadata"
)

// IsNoOp reports whether value, a framed metadata record value as it
// appears in the metadata log or a checkpoint, is a well-formed
// NoOpRecord: the record an idle active controller appends every
// metadata.max.idle.interval.ms so that the high watermark keeps moving
// (KIP-835). Replaying one changes nothing, so a follower of the log may
// skip it, and a lag or liveness check may count it. Only the frame is
// read for any other record type, so the test is cheap on every record.
func IsNoOp(value []byte) bool {
	r := kbin.NewReader(value)
	frame, key := r.Uvarint(), r.Uvarint()
	if r.Err() != nil || frame != metadata.FrameVersion || key != uint32(metadata.APIKeyNoOpRecord) {
		return false
	}
	m, err := metadata.Decode(value)
	return err == nil && IsNoOpRecord(m)
}

// IsNoOpRecord reports whether r is a NoOpRecord (KIP-835).
func IsNoOpRecord(r metadata.Record) bool {
	_, ok := r.(*metadata.NoOpRecord)
	return ok
}
