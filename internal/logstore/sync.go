package logstore

import (
	"fmt"

	"github.com/krabka-go/krabka/internal/bugzoo"
)

// Sync makes every batch appended so far durable with one fsync, of the
// active segment (rolled segments were fsynced when rolled, and the
// directory when each segment was created). It returns the synced offset,
// which [Log.SyncedOffset] reports from then on. It does not write the
// recovery point: [Log.CheckpointRecoveryPoint] does, off the commit path.
//
// A failed Sync poisons the log: the error wraps the cause, and every later
// write or sync fails with [ErrPoisoned]. The fsync is never retried,
// because after a failed fsync the kernel may have dropped the dirty pages
// and a retry could report success for data that is gone. Reopen the log
// to recover from what is really on disk.
func (l *Log) Sync() (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return l.synced, err
	}
	s := l.active()
	if l.synced == s.next {
		return l.synced, nil
	}
	if err := s.log.Sync(); err != nil {
		if bugzoo.Active(bugzoo.Z20) && s.log.Sync() == nil {
			// Z20: the fsync is retried, and its success taken for the
			// durability of pages the failed one may have dropped.
			l.synced = s.next
			return l.synced, nil
		}
		return l.synced, l.poison(fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err))
	}
	l.synced = s.next
	return l.synced, nil
}

// SyncConcurrent is [Log.Sync] without holding the log's lock during the
// fsync, so that appends and reads go on while it runs: it takes the
// active segment and its end offset under the lock, fsyncs the segment
// unlocked, and then records that end offset (or a higher one a roll
// synced meanwhile) as synced. Batches appended after it started may not
// be covered; the returned offset, the synced offset when it is done, says
// what is. While it runs, nothing truncates, closes or deletes a file:
// truncations, advancing the log start and Close wait for it
// (so the offsets it covers cannot be rewritten under it), and a roll,
// which keeps the sealed segment's files open, fsyncs that segment itself.
// Its failure poisons the log as Sync's does.
func (l *Log) SyncConcurrent() (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return l.synced, err
	}
	s := l.active()
	end := s.next
	if l.synced >= end {
		return l.synced, nil
	}
	l.syncing++
	l.mu.Unlock()
	err := s.log.Sync()
	l.mu.Lock()
	l.syncing--
	if l.syncing == 0 {
		l.syncIdle.Broadcast()
	}
	if err != nil {
		return l.synced, l.poison(fmt.Errorf("logstore: sync segment %s: %w", s.path(logSuffix), err))
	}
	if err := l.checkWritable(); err != nil {
		return l.synced, err
	}
	l.synced = max(l.synced, end)
	return l.synced, nil
}

// awaitSyncs waits, with mu held, until no SyncConcurrent fsync runs, so
// that the caller may close or delete files.
func (l *Log) awaitSyncs() {
	for l.syncing > 0 {
		l.syncIdle.Wait()
	}
}

// RecoveryPoint returns the recovery point last written to
// krabka-recovery-point and fsynced: recovery refuses to start when data
// below it is damaged. It never exceeds [Log.SyncedOffset], and lags it
// until the next [Log.CheckpointRecoveryPoint].
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rp.offset
}

// CheckpointRecoveryPoint writes the synced offset (that of the last
// completed [Log.Sync], roll or recovery, never a higher one) as the
// recovery point and fsyncs it, when it moved. It returns the recovery
// point. The runtime calls it periodically and the log itself on roll and
// Close, so that the recovery point trails the synced offset by at most
// one interval; truncations lower it at once.
//
// A failure poisons the log, as a failed Sync does.
func (l *Log) CheckpointRecoveryPoint() (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return l.rp.offset, err
	}
	if err := l.checkpointLocked(); err != nil {
		return l.rp.offset, err
	}
	return l.rp.offset, nil
}

// checkpointLocked writes l.synced as the recovery point when it differs.
func (l *Log) checkpointLocked() error {
	if l.rp.offset == l.synced {
		return nil
	}
	if l.rp.offset > l.synced {
		panic(fmt.Sprintf("logstore: invariant: recovery point %d above the synced offset %d", l.rp.offset, l.synced))
	}
	if err := l.rp.set(l.synced); err != nil {
		return l.poison(err)
	}
	return nil
}
