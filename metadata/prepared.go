package metadata

// PreparedRun is a run of records decoded, and partly checked, ahead of
// their replay, possibly on another goroutine than the replay's: a
// snapshot load decodes the next records while the image is built from
// the ones before. Of a PartitionRecord it keeps the partition already
// packed, when the record passes the checks that depend on nothing but
// itself, so that the replay only looks up and changes the image.
// [Delta.ReplayRun] replays the run with exactly the outcome of
// replaying each record with [Delta.ReplayNext].
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
	var p *Partition
	if pr, ok := rec.(*PartitionRecord); ok {
		p = packPartitionRecord(pr, &r.arena)
	}
	r.recs = append(r.recs, rec)
	r.packed = append(r.packed, p)
	return nil
}

// ReplayRun replays the records of r in order, all at offset and epoch
// (as [Delta.ReplaySnapshot]), continuing the current run of changes as
// [Delta.ReplayNext] does. It stops at the first rejection and returns
// it; the records before it stay applied.
func (d *Delta) ReplayRun(r *PreparedRun, offset int64, epoch int32) error {
	for i, rec := range r.recs {
		if err := d.replayPacked(rec, r.packed[i], offset, epoch); err != nil {
			return err
		}
	}
	return nil
}
