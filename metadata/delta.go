package metadata

import (
	"errors"
	"fmt"
)

// Kinds of rejection. A [*ReplayError] matches exactly one of them with
// errors.Is, so callers can map a rejection to a Kafka error code.
var (
	// ErrNotFound: the record names something the image does not hold
	// (a topic, partition, broker, ACL, credential or token).
	ErrNotFound = errors.New("metadata: not found")
	// ErrAlreadyExists: the record creates something that exists (a
	// topic name or id, a partition, an ACL id).
	ErrAlreadyExists = errors.New("metadata: already exists")
	// ErrInvalidRecord: a field holds a value Kafka's controller would
	// never write (an empty name, a leader outside the replicas, ...).
	ErrInvalidRecord = errors.New("metadata: invalid record")
	// ErrStaleBrokerEpoch: the broker epoch of the record is not the
	// epoch of the broker's current registration.
	ErrStaleBrokerEpoch = errors.New("metadata: stale broker epoch")
	// ErrUnsupportedFeature: the record needs a metadata.version or
	// feature level the image does not have, or sets a level outside
	// the supported range.
	ErrUnsupportedFeature = errors.New("metadata: unsupported feature level")
	// ErrUnsupportedMetadataVersion: a FeatureLevelRecord finalizes a
	// metadata.version outside [MinMetadataVersion, MaxMetadataVersion],
	// the range this release supports. It matches ErrUnsupportedFeature.
	ErrUnsupportedMetadataVersion = fmt.Errorf("%w: metadata.version outside the supported range", ErrUnsupportedFeature)
	// ErrTransactionState: a Begin, End or AbortTransactionRecord out of
	// place.
	ErrTransactionState = errors.New("metadata: invalid transaction state")
	// ErrOffsetOrder: the record's offset or epoch is below the last
	// replayed one.
	ErrOffsetOrder = errors.New("metadata: offset or epoch out of order")
)

// ReplayError is the rejection of a record by [Delta.Replay]. It names
// the record, its offset, the kind of rejection (one of the Err...
// sentinels above, matched by errors.Is) and the reason.
type ReplayError struct {
	// APIKey is the type of the rejected record, -1 for a nil record.
	APIKey APIKey
	// Offset is the offset passed to Replay.
	Offset int64
	// Kind is ErrNotFound, ErrAlreadyExists, ErrInvalidRecord,
	// ErrStaleBrokerEpoch, ErrUnsupportedFeature (or
	// ErrUnsupportedMetadataVersion, which matches it),
	// ErrTransactionState or ErrOffsetOrder.
	Kind error
	// Reason says what is wrong, naming the entity.
	Reason string
}

// Error implements error.
func (e *ReplayError) Error() string {
	return fmt.Sprintf("metadata: replay %s at offset %d: %s", e.APIKey, e.Offset, e.Reason)
}

// Unwrap returns the kind of rejection.
func (e *ReplayError) Unwrap() error { return e.Kind }

// rejection is a ReplayError before the record and offset are known.
type rejection struct {
	kind   error
	reason string
}

// Error implements error; Replay turns a rejection into a ReplayError.
func (r *rejection) Error() string { return r.reason }

func reject(kind error, format string, args ...any) error {
	return &rejection{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// Delta replays records on top of an image and produces the next image
// (Kafka's MetadataDelta together with the loader's transaction
// handling). It validates every record against the state it would change
// and rejects invalid ones with a [*ReplayError]; a rejected record
// leaves the delta exactly as it was.
//
// Records between a BeginTransactionRecord and its EndTransactionRecord
// (KIP-868) are applied atomically: while a transaction is open,
// [Delta.Apply] returns the image as of the record before the Begin, and
// an AbortTransactionRecord discards the transaction's records.
//
// A Delta, and any copy of it, is not safe for concurrent use (copies
// share the source of edit tokens); the images it returns are.
// Replaying costs O(log n) time and allocations per record; the images
// share all unchanged state with their base. Within one call of
// [Delta.ReplayBatch] or [Delta.ReplaySnapshot], and across calls of
// [Delta.ReplayNext], the delta changes the nodes it made for earlier
// records of the run in place, so a run of records allocates only for
// what is new. No other call changes nodes made by an earlier call, so a
// copy of a Delta value (saved := *d) taken between calls stays valid,
// unless ReplayNext continues the run it was taken in: assigning it back
// (*d = saved) rolls the delta back to that point.
type Delta struct {
	cur Image
	// txn is the state before the open transaction's Begin, nil when no
	// transaction is open.
	txn *Image
	// tokens hands out the edit tokens; it is shared by copies of the
	// Delta, so a token is never handed out twice.
	tokens *tokenSlab
}

// tokenSlab hands out edit tokens from blocks, so that a token costs
// neither an allocation per record nor, held by the nodes stamped with
// it, a memory block of its own.
type tokenSlab struct {
	free []editToken
}

// next returns a token never returned before.
func (s *tokenSlab) next() *editToken {
	if len(s.free) == 0 {
		s.free = make([]editToken, 256)
	}
	t := &s.free[0]
	s.free = s.free[1:]
	return t
}

// NewDelta returns a delta on top of base.
func NewDelta(base *Image) *Delta {
	d := &Delta{tokens: new(tokenSlab)}
	d.Reset(base)
	return d
}

// Reset makes d a delta on top of base, as new, reusing d's storage. The
// images d returned before, and copies of d taken before, are unaffected:
// nothing d changes from now on was reachable from them.
func (d *Delta) Reset(base *Image) {
	*d = Delta{cur: *base, tokens: d.tokens}
	d.cur.edit = d.tokens.next()
}

// InTransaction reports whether a metadata transaction is open.
func (d *Delta) InTransaction() bool { return d.txn != nil }

// Offset returns the offset of the last record replayed, transaction
// records included.
func (d *Delta) Offset() int64 { return d.cur.offset }

// ChangedAt is [Image.ChangedAt] of the records replayed so far,
// those of an open transaction included.
func (d *Delta) ChangedAt() int64 { return d.cur.changed }

// DelegationToken returns the token as the records replayed so far leave
// it, those of an open transaction included.
func (d *Delta) DelegationToken(id string) (*DelegationToken, bool) { return d.cur.tokens.Get(id) }

// Apply returns the image of everything replayed so far, or, while a
// transaction is open, of everything before the transaction. The delta
// stays usable: later records continue from its current state.
func (d *Delta) Apply() *Image {
	if d.txn != nil {
		img := *d.txn
		return &img
	}
	img := d.cur
	img.edit = nil
	// The image now shares the delta's nodes: later records must copy
	// them.
	d.cur.edit = d.tokens.next()
	return &img
}

// Replay validates rec against the delta's current state and applies it
// as the record at offset in leader epoch epoch. Offsets and epochs must
// not decrease; records of a snapshot, which have no offsets of their
// own, are all replayed at the snapshot's last contained offset and
// epoch (see [Delta.ReplaySnapshot]). On rejection it returns a
// [*ReplayError] and changes nothing.
//
// Replay keeps no reference to rec or its slices.
func (d *Delta) Replay(rec Record, offset int64, epoch int32) error {
	d.cur.edit = d.tokens.next()
	return d.replayOne(rec, offset, epoch)
}

// ReplayNext replays rec like [Delta.Replay], but continues the current
// run of changes instead of starting one: like the records of one
// [Delta.ReplayBatch] call, it changes in place the nodes made for the
// records replayed since the run began, so a stream of records replayed
// one at a time allocates only for what is new. A run begins with every
// call of Replay, ReplayBatch, ReplaySnapshot, Skip or Apply, and a
// Delta restored from a copy (*d = saved) continues the run that was
// current when the copy was taken. A copy taken since the run began is
// therefore no rollback point across a ReplayNext: take it, then start a
// run (for instance with Replay) before replaying more with ReplayNext.
//
// On rejection it returns a [*ReplayError] and changes nothing, like
// Replay. It keeps no reference to rec or its slices.
func (d *Delta) ReplayNext(rec Record, offset int64, epoch int32) error {
	return d.replayOne(rec, offset, epoch)
}

// ReplayBatch replays the records of one run of the log, recs[i] at
// offset base+i in epoch epoch, like as many calls of [Delta.Replay] but
// with fewer allocations: nodes made for one record of the run are
// changed in place by the next ones. It stops at the first rejection and
// returns the number of records applied and the [*ReplayError]; the
// rejected record changed nothing, the ones before it stay applied.
func (d *Delta) ReplayBatch(recs []Record, base int64, epoch int32) (int, error) {
	d.cur.edit = d.tokens.next()
	for i, r := range recs {
		if err := d.replayOne(r, base+int64(i), epoch); err != nil {
			return i, err
		}
	}
	return len(recs), nil
}

// ReplaySnapshot replays the records of a snapshot, all at offset and
// epoch (the snapshot's last contained offset, its end offset minus one,
// and its epoch), with the allocations of [Delta.ReplayBatch]. It stops
// at the first rejection and returns it; the records before it stay
// applied.
func (d *Delta) ReplaySnapshot(recs []Record, offset int64, epoch int32) error {
	d.cur.edit = d.tokens.next()
	for _, r := range recs {
		if err := d.replayOne(r, offset, epoch); err != nil {
			return err
		}
	}
	return nil
}

// Skip moves the delta's provenance to offset and epoch without
// applying a record, as Kafka's loader does past a record it failed to
// replay: a committed record that the image rejects (every replica
// rejects it alike) still occupies its offset, and the image's
// [Image.Offset] must cover it, for instance to name a snapshot. Offsets
// and epochs must not decrease, as for Replay.
func (d *Delta) Skip(offset int64, epoch int32) error {
	d.cur.edit = d.tokens.next()
	return d.replayOne(NewNoOpRecord(), offset, epoch)
}

// replayOne is Replay under the current edit token.
func (d *Delta) replayOne(rec Record, offset int64, epoch int32) error {
	return d.replayPacked(rec, nil, nil, offset, epoch)
}

// replayPacked is replayOne for a record of a PreparedRun (rs not nil):
// packed is the partition of a PartitionRecord packed and checked
// beforehand, or nil when it was not (or is not a PartitionRecord).
func (d *Delta) replayPacked(rec Record, packed *Partition, rs *runState, offset int64, epoch int32) error {
	pr, isPartition := rec.(*PartitionRecord)
	if rs != nil && !isPartition {
		rs.last = nil
	}
	if rec == nil {
		return &ReplayError{APIKey: -1, Offset: offset, Kind: ErrInvalidRecord, Reason: "nil record"}
	}
	fail := func(err error) error {
		var r *rejection
		if errors.As(err, &r) {
			return &ReplayError{APIKey: rec.APIKey(), Offset: offset, Kind: r.kind, Reason: r.reason}
		}
		return &ReplayError{APIKey: rec.APIKey(), Offset: offset, Kind: ErrInvalidRecord, Reason: err.Error()}
	}
	switch {
	case offset < 0:
		return fail(reject(ErrOffsetOrder, "negative offset %d", offset))
	case epoch < 0:
		return fail(reject(ErrOffsetOrder, "negative epoch %d", epoch))
	case offset < d.cur.offset:
		return fail(reject(ErrOffsetOrder, "offset %d is below the last replayed offset %d", offset, d.cur.offset))
	case epoch < d.cur.epoch:
		return fail(reject(ErrOffsetOrder, "epoch %d is below the last replayed epoch %d", epoch, d.cur.epoch))
	}
	switch rec.(type) {
	case *BeginTransactionRecord:
		if d.txn != nil {
			return fail(reject(ErrTransactionState, "a transaction is already open"))
		}
		if mv := d.cur.features.metadataVersion; mv != 0 && mv < metadataVersion3_6_IV1 {
			return fail(reject(ErrUnsupportedFeature, "metadata transactions need metadata.version 3.6-IV1 (13), have %d", mv))
		}
		before := d.cur
		before.edit = nil
		d.txn = &before
		// Abort returns to before: the transaction must copy its nodes.
		d.cur.edit = d.tokens.next()
		d.cur.offset, d.cur.epoch = offset, epoch
		return nil
	case *EndTransactionRecord:
		if d.txn == nil {
			return fail(reject(ErrTransactionState, "no transaction is open"))
		}
		d.txn = nil
		d.cur.offset, d.cur.epoch = offset, epoch
		return nil
	case *AbortTransactionRecord:
		if d.txn == nil {
			return fail(reject(ErrTransactionState, "no transaction is open"))
		}
		d.cur = *d.txn
		d.cur.edit = d.tokens.next()
		d.txn = nil
		d.cur.offset, d.cur.epoch = offset, epoch
		return nil
	}
	next := d.cur
	var err error
	if rs != nil && isPartition && next.features.metadataVersion != 0 {
		// What replay checks before it replays a PartitionRecord.
		err = next.replayPackedPartition(pr, packed, rs)
	} else if err = next.replay(rec); err == nil && rs != nil {
		if t, ok := rec.(*TopicRecord); ok {
			rs.last, _ = next.topics.byID.Get(t.TopicId)
		}
	}
	if err != nil {
		return fail(err)
	}
	next.offset, next.epoch = offset, epoch
	if _, noop := rec.(*NoOpRecord); !noop {
		next.changed = offset
	}
	d.cur = next
	return nil
}

// metadataVersion3_6_IV1 adds metadata transactions (KIP-868).
const metadataVersion3_6_IV1 int16 = 13

// replay applies one record to img, the delta's working copy. Every
// handler validates the record completely before it changes anything:
// changes may be made in place (nodes stamped with img.edit), so a
// rejection after a change would leak into the delta.
func (img *Image) replay(rec Record) error {
	switch r := rec.(type) {
	case *NoOpRecord:
		return nil
	case *FeatureLevelRecord:
		return img.replayFeatureLevel(r)
	case *ZkMigrationStateRecord:
		return img.replayZkMigration(r)
	}
	if img.features.metadataVersion == 0 {
		return reject(ErrUnsupportedFeature, "metadata.version is not set; only FeatureLevelRecord, ZkMigrationStateRecord, NoOpRecord and transaction records may come first")
	}
	switch r := rec.(type) {
	case *RegisterBrokerRecord:
		return img.replayRegisterBroker(r)
	case *UnregisterBrokerRecord:
		return img.replayUnregisterBroker(r)
	case *FenceBrokerRecord:
		return img.replayFenceBroker(r.Id, r.Epoch, true)
	case *UnfenceBrokerRecord:
		return img.replayFenceBroker(r.Id, r.Epoch, false)
	case *BrokerRegistrationChangeRecord:
		return img.replayBrokerRegistrationChange(r)
	case *RegisterControllerRecord:
		return img.replayRegisterController(r)
	case *TopicRecord:
		return img.replayTopic(r)
	case *PartitionRecord:
		return img.replayPartition(r)
	case *PartitionChangeRecord:
		return img.replayPartitionChange(r)
	case *ClearElrRecord:
		return img.replayClearElr(r)
	case *RemoveTopicRecord:
		return img.replayRemoveTopic(r)
	case *ConfigRecord:
		return img.replayConfig(r)
	case *ClientQuotaRecord:
		return img.replayClientQuota(r)
	case *ProducerIdsRecord:
		return img.replayProducerIDs(r)
	case *AccessControlEntryRecord:
		return img.replayACL(r)
	case *RemoveAccessControlEntryRecord:
		return img.replayRemoveACL(r)
	case *UserScramCredentialRecord:
		return img.replayScram(r)
	case *RemoveUserScramCredentialRecord:
		return img.replayRemoveScram(r)
	case *DelegationTokenRecord:
		return img.replayDelegationToken(r)
	case *RemoveDelegationTokenRecord:
		return img.replayRemoveDelegationToken(r)
	}
	return reject(ErrInvalidRecord, "record type %s cannot be replayed into an image", rec.APIKey())
}
