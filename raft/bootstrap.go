package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// metadataVersionTransactions is 3.6-IV1, the first metadata.version with
// metadata transactions (KIP-868); the metadata package refuses a
// BeginTransactionRecord below it.
const metadataVersionTransactions int16 = 13

// readBootstrap returns the bootstrap records of
// <metadata.log.dir>/bootstrap.checkpoint, which krabka storage format
// writes (Kafka's StorageTool and BootstrapDirectory). Without the file (a directory that was never
// formatted, as with [ForTests]) it returns a single FeatureLevelRecord
// for metadata.version at [metadata.MaxMetadataVersion], the latest level
// the metadata package knows. A file without metadata.version is refused.
func readBootstrap(fsys vfs.FS, logDir string) ([]metadata.Record, error) {
	path := filepath.Join(logDir, snapshot.BootstrapFile)
	r, err := snapshot.Open(fsys, path, snapshot.ReadOptions{})
	if errors.Is(err, snapshot.ErrNotFound) {
		mv := metadata.NewFeatureLevelRecord()
		mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
		return []metadata.Record{mv}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("raft: read %s: %w", path, err)
	}
	defer func() { _ = r.Close() }()
	var recs []metadata.Record
	hasMV := false
	for r.Next() {
		for _, rec := range r.Batch().Records {
			m, err := metadata.Decode(rec.Value)
			if err != nil {
				return nil, fmt.Errorf("raft: read %s: %w", path, err)
			}
			if fl, ok := m.(*metadata.FeatureLevelRecord); ok && fl.Name == metadata.FeatureMetadataVersion && fl.FeatureLevel > 0 {
				hasMV = true
			}
			recs = append(recs, m)
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("raft: read %s: %w", path, err)
	}
	if !hasMV {
		return nil, fmt.Errorf("raft: %s sets no metadata.version", path)
	}
	// The first leader would write it into the log, where every node
	// would stop on it: refuse it before the node joins.
	if mv := bootstrapMetadataVersion(recs); mv < metadata.MinMetadataVersion || mv > metadata.MaxMetadataVersion {
		return nil, fmt.Errorf("raft: %s finalizes metadata.version %d, outside the range %d-%d this release supports (%w): format the directory again with a supported --release-version, or run a release that supports it",
			path, mv, metadata.MinMetadataVersion, metadata.MaxMetadataVersion, metadata.ErrUnsupportedMetadataVersion)
	}
	return recs, nil
}

// bootstrapMetadataVersion is the metadata.version level recs set, 0 if
// none.
func bootstrapMetadataVersion(recs []metadata.Record) int16 {
	var mv int16
	for _, r := range recs {
		if fl, ok := r.(*metadata.FeatureLevelRecord); ok && fl.Name == metadata.FeatureMetadataVersion {
			mv = fl.FeatureLevel
		}
	}
	return mv
}

// activationRecords are the records the first leader of an empty log
// appends (Kafka's ActivationRecordsGenerator.recordsForEmptyLog): the
// bootstrap records, wrapped in Begin/EndTransactionRecord when their
// metadata.version supports metadata transactions. Kafka also adds a
// cluster min.insync.replicas ConfigRecord when ELR is enabled; Krabka
// does not write it.
func activationRecords(bootstrap []metadata.Record) []metadata.Record {
	if bootstrapMetadataVersion(bootstrap) < metadataVersionTransactions {
		return bootstrap
	}
	begin := metadata.NewBeginTransactionRecord()
	name := "Bootstrap records"
	begin.Name = &name
	recs := make([]metadata.Record, 0, len(bootstrap)+2)
	recs = append(recs, begin)
	recs = append(recs, bootstrap...)
	return append(recs, metadata.NewEndTransactionRecord())
}

// maybeActivate queues the bootstrap records ahead of every other
// submission once per epoch, when this node is the active leader, has
// applied the whole log before its epoch and its image has no
// metadata.version: the log holds no metadata yet. A log (or snapshot)
// that set metadata.version is never bootstrapped again.
func (e *engine) maybeActivate() {
	st := e.lastStatus
	if st.Role != kraft.Leader || st.ShuttingDown || e.resigning || e.activatedEpoch == st.Epoch || !e.caughtUp(st.Epoch) {
		return
	}
	e.activatedEpoch = st.Epoch
	if e.pub.image.Load().Features().MetadataVersion() != 0 {
		return
	}
	recs := activationRecords(e.bootstrap)
	s := &submission{records: recs, forwarded: true}
	for _, r := range recs {
		b, err := metadata.Encode(r)
		if err != nil {
			panic(fmt.Sprintf("raft: invariant: encode bootstrap %s: %v", r.APIKey(), err))
		}
		s.encoded = append(s.encoded, b)
	}
	s.complete = func(res SubmitResult, err error) {
		if err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelWarn, "bootstrap records not appended",
				slog.Int(logKeyEpoch, int(st.Epoch)), slog.String(logKeyError, err.Error()))
			return
		}
		e.logger.LogAttrs(context.Background(), slog.LevelInfo, "bootstrap records committed",
			slog.Int(logKeyEpoch, int(res.Epoch)), slog.Int64(logKeyOffset, res.Offset))
	}
	e.sub.pending = append([]*submission{s}, e.sub.pending...)
}
