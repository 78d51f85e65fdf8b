package raft

import (
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
)

// formatBootstrap writes bootstrap.checkpoint into cfg's metadata log
// directory as krabka storage format does, with metadata.version mv.
func formatBootstrap(t testing.TB, cfg Config, mv int16) {
	t.Helper()
	r := metadata.NewFeatureLevelRecord()
	r.Name, r.FeatureLevel = metadata.FeatureMetadataVersion, mv
	v, err := metadata.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteBootstrapCheckpoint(vfs.OS(), cfg.MetadataLogDir, time.Now().UnixMilli(), [][]byte{v}); err != nil {
		t.Fatal(err)
	}
}

// countBootstrap counts the metadata.version FeatureLevelRecords and the
// BeginTransactionRecords in the committed log bytes raw.
func countBootstrap(t testing.TB, raw []byte) (mvs, begins int) {
	t.Helper()
	var dec recordbatch.Decoder
	it := recordbatch.NewIterator(&dec, raw)
	for it.Next() {
		b := it.Batch()
		if b.IsControl() {
			continue
		}
		for i := range b.Records {
			rec, err := metadata.Decode(b.Records[i].Value)
			if err != nil {
				t.Fatal(err)
			}
			switch r := rec.(type) {
			case *metadata.FeatureLevelRecord:
				if r.Name == metadata.FeatureMetadataVersion {
					mvs++
				}
			case *metadata.BeginTransactionRecord:
				begins++
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return mvs, begins
}

// TestClusterAppliesBootstrap: on a freshly formatted quorum the first
// leader appends bootstrap.checkpoint's records, so that a TopicRecord
// commits without any client-submitted metadata.version and every image
// has the bootstrap's level; after a restart of every node the records
// are not appended again.
func TestClusterAppliesBootstrap(t *testing.T) {
	const mv = metadata.MetadataVersion3_9_IV0
	c := newTestClusterWith(t, 3, "bootstrap-cluster", func(cfg *Config) { formatBootstrap(t, *cfg, mv) })
	res := c.submitRetrying(topicRecord("first"))
	c.waitApplied(res.LastOffset + 1)
	for i := range c.nodes {
		img := c.node(NodeID(i + 1)).CurrentImage()
		if got := img.Features().MetadataVersion(); got != mv {
			t.Errorf("node %d: metadata.version %d, want the bootstrap's %d", i+1, got, mv)
		}
		if _, ok := img.Topics().ByName("first"); !ok {
			t.Errorf("node %d: image has no topic first", i+1)
		}
	}

	for i := range c.nodes {
		c.stop(NodeID(i + 1))
	}
	for i := range c.nodes {
		c.restart(NodeID(i + 1))
	}
	c.leader()
	after := c.submitRetrying(topicRecord("second"))
	c.waitApplied(after.LastOffset + 1)
	var hws []int64
	for i := range c.nodes {
		hws = append(hws, c.node(NodeID(i+1)).QuorumState().HighWatermark)
	}
	for i := range c.nodes {
		c.stop(NodeID(i + 1))
	}
	common := min(hws[0], hws[1], hws[2])
	for i, cfg := range c.cfgs {
		mvs, begins := countBootstrap(t, readCommitted(t, cfg, common))
		if mvs != 1 || begins != 1 {
			t.Errorf("node %d: the log holds %d metadata.version records and %d BeginTransactionRecords, want 1 and 1", i+1, mvs, begins)
		}
	}
}

// TestActivationRecords: the bootstrap records are wrapped in a
// transaction from 3.6-IV1 (13) on, and appended alone below it.
func TestActivationRecords(t *testing.T) {
	for _, tc := range []struct {
		mv   int16
		want []metadata.APIKey
	}{
		{metadata.MinMetadataVersion, []metadata.APIKey{metadata.APIKeyFeatureLevelRecord}},
		{12, []metadata.APIKey{metadata.APIKeyFeatureLevelRecord}},
		{13, []metadata.APIKey{metadata.APIKeyBeginTransactionRecord, metadata.APIKeyFeatureLevelRecord, metadata.APIKeyEndTransactionRecord}},
		{metadata.MaxMetadataVersion, []metadata.APIKey{metadata.APIKeyBeginTransactionRecord, metadata.APIKeyFeatureLevelRecord, metadata.APIKeyEndTransactionRecord}},
	} {
		r := metadata.NewFeatureLevelRecord()
		r.Name, r.FeatureLevel = metadata.FeatureMetadataVersion, tc.mv
		var got []metadata.APIKey
		for _, rec := range activationRecords([]metadata.Record{r}) {
			got = append(got, rec.APIKey())
		}
		if len(got) != len(tc.want) {
			t.Errorf("metadata.version %d: %v, want %v", tc.mv, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("metadata.version %d: %v, want %v", tc.mv, got, tc.want)
				break
			}
		}
	}
}

// TestReadBootstrapFallback: without bootstrap.checkpoint the bootstrap is
// metadata.version at the latest level the metadata package knows.
func TestReadBootstrapFallback(t *testing.T) {
	recs, err := readBootstrap(vfs.OS(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := bootstrapMetadataVersion(recs); len(recs) != 1 || got != metadata.MaxMetadataVersion {
		t.Errorf("fallback bootstrap %v (metadata.version %d), want one record at %d", recs, got, metadata.MaxMetadataVersion)
	}
}
