package metadata

// PreparedRun is a run of records decoded, and partly checked, ahead of
// their replay, possibly on another goroutine than the replay's: a
// snapshot load decodes the next records while the image is built from
// the ones before. [PreparedRun.Pack] packs the partitions of its
// PartitionRecords that pass the checks that depend on nothing but
// themselves, so that the replay only looks up and changes the image.
// [Delta.ReplayRun] replays the run, packed or not, with exactly the
// outcome of replaying each record with [Delta.ReplayNext].
//
// A PreparedRun is reused run after run (see [PreparedRun.Reset]); the
// zero PreparedRun is ready to use. It is not safe for concurrent use:
// one goroutine fills it, then hands it to the one that replays it.
type PreparedRun struct {
	dec    RunDecoder
	recs   []Record
	packed []*Partition // by record: its packed partition, or nil
	// arena holds the packed partitions. It never hands out memory
	// twice, so they outlive the run in the image.
	arena partitionArena
}

// Reset empties the run, keeping its records for reuse.
func (r *PreparedRun) Reset() {
	r.dec.Reset()
	r.recs = r.recs[:0]
	clear(r.packed)
	r.packed = r.packed[:0]
}

// Len returns the number of records in the run.
func (r *PreparedRun) Len() int { return len(r.recs) }

// Add decodes value, as [Decode] does, and appends its record to the run.
// A value that does not decode is not added, and Add returns the error.
func (r *PreparedRun) Add(value []byte) error {
	rec, err := r.dec.Decode(value)
	if err != nil {
		return err
	}
	r.recs = append(r.recs, rec)
	r.packed = append(r.packed, nil)
	return nil
}

// Pack packs the partitions of the PartitionRecords added, ahead of the
// replay. Without it, ReplayRun packs them: a reader that has the time
// calls Pack to take that work off the replay.
func (r *PreparedRun) Pack() {
	for i, rec := range r.recs {
		if pr, ok := rec.(*PartitionRecord); ok && r.packed[i] == nil {
			r.packed[i] = packPartitionRecord(pr, &r.arena)
		}
	}
}

// ReplayRun replays the records of r in order, all at offset and epoch
// (as [Delta.ReplaySnapshot]), continuing the current run of changes as
// [Delta.ReplayNext] does. It stops at the first rejection and returns
// it; the records before it stay applied.
func (d *Delta) ReplayRun(r *PreparedRun, offset int64, epoch int32) error {
	// A partition of the topic of the record before (snapshots hold a
	// topic's partitions after it) needs no lookup.
	rs := runState{arena: &r.arena}
	for i, rec := range r.recs {
		if err := d.replayPacked(rec, r.packed[i], &rs, offset, epoch); err != nil {
			return err
		}
	}
	return nil
}
