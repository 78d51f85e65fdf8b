package prom

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// BenchmarkWrite measures one client write, from SubmitChange to its
// answer, on a one-node quorum with real fsyncs, without metrics and with
// a Recorder: the difference is the cost of recording a write.
func BenchmarkWrite(b *testing.B) {
	for _, withRecorder := range []bool{false, true} {
		b.Run("recorder="+strconv.FormatBool(withRecorder), func(b *testing.B) {
			cfg := raft.ForTests(1, b.TempDir())
			if withRecorder {
				r, err := New(prometheus.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				cfg.Metrics = r
			}
			c, err := raft.Start(b.Context(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Shutdown(b.Context()) })
			mv := metadata.NewFeatureLevelRecord()
			mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
			for {
				if _, err := c.SubmitChange(b.Context(), []metadata.Record{mv}); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond) // no leader yet
			}
			value := "v"
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r := metadata.NewConfigRecord()
				r.ResourceType, r.Name, r.Value = metadata.ConfigResourceBroker, "key", &value
				if _, err := c.SubmitChange(b.Context(), []metadata.Record{r}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
