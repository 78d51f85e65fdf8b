package raft

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// TestCommittedRecordTheImageRefusesStopsTheNode (a fatal fault, as
// Kafka's KAFKA-14275): a log holding a record the image refuses (a
// topic before any metadata.version) written by another program at epoch
// 1; once the node commits it, the node stops instead of serving an
// image that no longer follows its log: Err names the record, Done is
// closed, the fatal-fault and engine-loop checks fail with it, and a
// submission waiting for the leader fails with the cause.
func TestCommittedRecordTheImageRefusesStopsTheNode(t *testing.T) {
	c := startOnForeignLog(t, topicRecord("early"))
	submitted := make(chan error, 1)
	go func() {
		_, err := c.SubmitChange(t.Context(), []metadata.Record{metadataVersionRecord()})
		submitted <- err
	}()
	waitStopped(t, c, "a committed record its image refuses")
	var re *CommittedReplayError
	if err := c.Err(); !errors.As(err, &re) || re.Offset != 0 || re.Epoch != 1 || !errors.Is(err, metadata.ErrUnsupportedFeature) {
		t.Fatalf("Err = %v, want a CommittedReplayError for offset 0 at epoch 1 wrapping ErrUnsupportedFeature", err)
	}
	rs, err := c.LiveChecks(DefaultHealthOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := checkErr(rs, CheckFatalFault); !errors.As(err, &re) {
		t.Errorf("%s = %v, want the CommittedReplayError", CheckFatalFault, err)
	}
	if err, _ := checkErr(rs, CheckEngineLoop); !errors.As(err, &re) {
		t.Errorf("%s = %v, want the engine stopped by the CommittedReplayError", CheckEngineLoop, err)
	}
	if err := c.Live(time.Second); !errors.Is(err, ErrNotLive) {
		t.Errorf("Live = %v, want ErrNotLive", err)
	}
	if err := <-submitted; !errors.Is(err, ErrShuttingDown) || !errors.As(err, &re) {
		t.Fatalf("the waiting submission failed with %v, want ErrShuttingDown wrapping the CommittedReplayError", err)
	}
	if err := c.Shutdown(context.Background()); !errors.As(err, &re) {
		t.Fatalf("Shutdown = %v, want the CommittedReplayError", err)
	}
}

// writeForeignLog writes, as another program would, one batch of recs at
// epoch into the metadata log of cfg (no quorum-state file), and returns
// the log's directory.
func writeForeignLog(t *testing.T, cfg Config, epoch int32, recs ...metadata.Record) string {
	t.Helper()
	dir := filepath.Join(cfg.MetadataLogDir, PartitionDirName)
	if err := logstore.MkdirAllDurable(vfs.OS(), dir); err != nil {
		t.Fatal(err)
	}
	log, _, err := logstore.Open(vfs.OS(), dir, logstore.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p := recordbatch.DefaultParams()
	p.PartitionLeaderEpoch = epoch
	var b recordbatch.Builder
	b.Reset(nil, p)
	for _, r := range recs {
		value, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(time.Now().UnixMilli(), nil, value, nil)
	}
	raw, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.AppendAsLeader(raw, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startOnForeignLog starts a single-voter node on a log that another
// program wrote at epoch 1, holding recs, with node 1 the leader of
// epoch 1 in its quorum-state file; the node is shut down when the test
// ends.
func startOnForeignLog(t *testing.T, recs ...metadata.Record) *Controller {
	t.Helper()
	cfg := ForTests(1, t.TempDir())
	dir := writeForeignLog(t, cfg, 1, recs...)
	qs := logstore.QuorumStateData{LeaderID: 1, LeaderEpoch: 1, VotedID: -1, CurrentVoters: []kraft.NodeID{1}}
	if err := logstore.WriteQuorumState(vfs.OS(), dir, qs); err != nil {
		t.Fatal(err)
	}
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c
}

// waitStopped waits for c's engine to stop on its own, and fails the
// test if it still runs after a while with what.
func waitStopped(t *testing.T, c *Controller, what string) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the node still runs with %s", what)
	}
}

// TestImpossibleLogStatesAreFatalFaults: a truncation below what the
// image applied and an append the log store placed elsewhere than the
// core are refused with a LogStateError, which the Ready executor
// returns before it acts, so the engine stops on it as on every fatal
// fault (TestCommittedRecordTheImageRefusesStopsTheNode shows that
// path); the limits themselves pass.
func TestImpossibleLogStatesAreFatalFaults(t *testing.T) {
	var le *LogStateError
	if err := checkTruncation(9, 10); !errors.As(err, &le) || le.Op != "truncate" {
		t.Errorf("truncating to 9 with 10 applied = %v, want a LogStateError on truncate", err)
	} else if want := "raft: impossible log state on truncate, so the node stops: the core asks to truncate the log to end at offset 9, below offset 10, the end of what the image has applied (committed records)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if err := checkTruncation(10, 10); err != nil {
		t.Errorf("truncating to the applied end = %v, want nil", err)
	}
	if err := checkPlacement(5, 8, 5, 9); !errors.As(err, &le) || le.Op != "append" || !strings.Contains(err.Error(), "placed the append at [5, 8), the core at [5, 9)") {
		t.Errorf("a misplaced append = %v, want a LogStateError on append naming both ranges", err)
	}
	if err := checkPlacement(5, 9, 5, 9); err != nil {
		t.Errorf("an append where the core placed it = %v, want nil", err)
	}
}
