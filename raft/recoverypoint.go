package raft

import (
	"fmt"
	"time"
)

// recoveryCheckpointInterval bounds how far the log's recovery point
// (krabka-recovery-point, docs/storage.md) trails its synced offset: the
// engine checkpoints it this long after it first falls behind, so at most
// once per interval under load and never on an idle log. Log.Sync fsyncs
// only the segment, keeping the checkpoint's fsync off the commit path;
// the log also checkpoints at every segment roll and at Close, and lowers
// the recovery point at once before a truncation.
//
// Kafka's log.flush.offset.checkpoint.interval.ms (60 s) schedules the
// same kind of checkpoint for a broker's partition logs, but not for the
// metadata log, which Kafka opens with recovery point 0 and validates
// whole on every start (KafkaRaftLog.createLog). Recovery here refuses to
// start on damage below the recovery point and cuts damage above it as a
// torn tail, so the interval is how much synced data loses that
// protection after a crash: one second of it, at the cost of one extra
// fsync per second under load.
const recoveryCheckpointInterval = time.Second

// maybeCheckpoint writes the log's recovery point once
// recoveryCheckpointInterval has passed since it fell behind the synced
// offset (timerCheckpoint, which the engine wakes up for).
func (e *engine) maybeCheckpoint() error {
	if e.log.RecoveryPoint() == e.log.SyncedOffset() {
		e.timers.stop(timerCheckpoint)
		return nil
	}
	now := e.clock.Now()
	if !e.timers.armed(timerCheckpoint) {
		e.timers.set(timerCheckpoint, now.Add(recoveryCheckpointInterval))
		return nil
	}
	if !e.timers.expired(timerCheckpoint, now) {
		return nil
	}
	e.timers.stop(timerCheckpoint)
	if _, err := e.log.CheckpointRecoveryPoint(); err != nil {
		return fmt.Errorf("raft: checkpoint the log's recovery point: %w", err)
	}
	return nil
}
