package raft

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// TestUnstableTogglesReachTheListenersAndFeatureRows follows
// unstable.api.versions.enable and unstable.feature.versions.enable from
// server.properties to where they are enforced: the listeners' request
// decoding (transport.ServerConfig.UnstableAPIVersions, which sets each
// connection's wire.Decoder), the versions the peer senders negotiate,
// the ApiVersions answer and the feature rows UpdateFeatures checks
// against.
func TestUnstableTogglesReachTheListenersAndFeatureRows(t *testing.T) {
	for _, on := range []bool{false, true} {
		v := "false"
		if on {
			v = "true"
		}
		cfg, _, err := ParseProperties([]byte(baseProperties + "unstable.api.versions.enable=" + v + "\nunstable.feature.versions.enable=" + v + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := newRuntimeConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rc.server.UnstableAPIVersions != on || rc.unstableAPI != on || rc.unstableFeatures != on ||
			rc.peer.UnstableAPIVersions != on || rc.forward.UnstableAPIVersions != on {
			t.Errorf("flags %v: listener %v, ApiVersions %v, features %v, peers %v, forwarding %v", on,
				rc.server.UnstableAPIVersions, rc.unstableAPI, rc.unstableFeatures, rc.peer.UnstableAPIVersions, rc.forward.UnstableAPIVersions)
		}
		fs := rc.featureState(metadata.EmptyImage(), 0)
		if fs.UnstableAPIVersions != on {
			t.Errorf("flags %v: ApiVersions answer built with UnstableAPIVersions %v", on, fs.UnstableAPIVersions)
		}
		pub := &publishedState{}
		pub.image.Store(metadata.EmptyImage())
		if fc := (&engine{rc: rc, pub: pub}).featureCheck(); fc.unstable != on {
			t.Errorf("flags %v: UpdateFeatures checks with unstable %v", on, fc.unstable)
		}

		// With Kafka 4.3.1's rows, both flags change nothing in the
		// answer: every feature Kafka 4.3.1 knows is listed at its
		// production range.
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(4)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
		resp := wire.AnswerAPIVersions(req, fs)
		got := map[string][2]int16{}
		for _, f := range resp.SupportedFeatures {
			got[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
		}
		want := map[string][2]int16{
			"eligible.leader.replicas.version": {0, 1}, "group.version": {0, 1}, "kraft.version": {0, 1},
			"metadata.version": {7, 30}, "share.version": {0, 1}, "streams.version": {0, 1}, "transaction.version": {0, 2},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("flags %v: supported features (-want +got):\n%s", on, d)
		}
	}
}

// TestFeatureStateCapsUnstableLevels checks the ApiVersions rows of a
// node whose feature rows hold unstable levels: they are advertised only
// with unstable.feature.versions.enable, as Kafka's
// QuorumFeatures.defaultSupportedFeatureMap advertises them.
func TestFeatureStateCapsUnstableLevels(t *testing.T) {
	reg := withUnstableLevel(metadata.FeatureGroupVersion, 2)
	for _, on := range []bool{false, true} {
		rc := runtimeConfig{features: reg, unstableFeatures: on}
		fs := rc.featureState(metadata.EmptyImage(), 0)
		wantMV, wantGV := int16(30), int16(1)
		if on {
			wantMV, wantGV = 31, 2
		}
		if fs.MetadataVersion.Max != wantMV {
			t.Errorf("unstable %v: metadata.version max %d, want %d", on, fs.MetadataVersion.Max, wantMV)
		}
		gv := wire.SupportedFeature{}
		for _, f := range fs.Other {
			if f.Name == metadata.FeatureGroupVersion {
				gv = f
			}
		}
		if gv.Max != wantGV {
			t.Errorf("unstable %v: group.version %+v, want max %d", on, gv, wantGV)
		}
	}
}

// withUnstableLevel returns Kafka 4.3.1's feature rows with one unstable
// level more: metadata.version 31, and level of feature, bootstrapped
// from 31; as a release carrying development levels has them. Kafka
// 4.3.1's rows have none (metadata.TestKnownFeaturesAreKafka431s).
func withUnstableLevel(feature string, level int16) metadata.FeatureRegistry {
	reg := metadata.KnownFeatures()
	reg.LatestMetadataVersion = 31
	for i := range reg.Features {
		if reg.Features[i].Name == feature {
			reg.Features[i].Levels = append(reg.Features[i].Levels, metadata.FeatureLevel{Level: level, BootstrapMetadataVersion: 31})
		}
	}
	return reg
}
