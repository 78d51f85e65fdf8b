package raft

import (
	"testing"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/metadata"
)

// scramRecord is a UserScramCredentialRecord for user whose salt names
// it, so that a lookup's result tells which record it came from.
func scramRecord(user, salt string) *metadata.UserScramCredentialRecord {
	r := metadata.NewUserScramCredentialRecord()
	r.Name, r.Mechanism, r.Salt, r.StoredKey, r.ServerKey, r.Iterations = user, metadata.ScramSHA512, []byte(salt), []byte("stored"), []byte("server"), 4096
	return r
}

// imageOf replays recs into an empty image.
func imageOf(t *testing.T, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	if _, err := d.ReplayBatch(recs, 0, 1); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

// TestScramLookupBootstrap (KIP-900): before anything is committed (an
// image without metadata.version) a SCRAM lookup reads the credentials
// the node started with, so that SCRAM between controllers can elect a
// leader: on an empty log the bootstrap records', after a restart its own
// log's. Once the image has metadata.version and the node has applied the
// log it started with, only the image counts, a credential removed since
// included.
func TestScramLookupBootstrap(t *testing.T) {
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	removeBob := metadata.NewRemoveUserScramCredentialRecord()
	removeBob.Name, removeBob.Mechanism = "bob", metadata.ScramSHA512
	removeCarol := metadata.NewRemoveUserScramCredentialRecord()
	removeCarol.Name, removeCarol.Mechanism = "carol", metadata.ScramSHA512
	boot := &startCredentials{creds: bootstrapScram([]metadata.Record{mv, scramRecord("alice", "boot-alice"), scramRecord("bob", "boot-bob"),
		scramRecord("alice", "boot-alice-2"), scramRecord("carol", "boot-carol"), removeCarol})}
	// A node restarted on a log of 40 records whose credentials are
	// alice's second.
	restarted := &startCredentials{creds: bootstrapScram([]metadata.Record{scramRecord("alice", "log-alice")}), until: 40}
	snapshotImage := imageOf(t, mv, scramRecord("alice", "snapshot-alice"))
	cases := []struct {
		name    string
		image   *metadata.Image
		start   *startCredentials
		applied int64
		user    string
		salt    string // "" when the lookup finds nothing
	}{
		{"nothing committed: the bootstrap's last record", metadata.EmptyImage(), boot, 0, "alice", "boot-alice-2"},
		{"nothing committed: a user the bootstrap lacks", metadata.EmptyImage(), boot, 0, "dave", ""},
		{"nothing committed: removed in the bootstrap", metadata.EmptyImage(), boot, 0, "carol", ""},
		{"committed: the image's credential", imageOf(t, mv, scramRecord("alice", "image-alice")), boot, 3, "alice", "image-alice"},
		{"committed: removed since the bootstrap", imageOf(t, mv, scramRecord("bob", "image-bob"), removeBob), boot, 3, "bob", ""},
		{"committed without the credential", imageOf(t, mv), boot, 3, "alice", ""},
		{"restarted, nothing applied: its log's", metadata.EmptyImage(), restarted, 0, "alice", "log-alice"},
		{"restarted from a snapshot, log not applied: its log's", snapshotImage, restarted, 39, "alice", "log-alice"},
		{"restarted, log applied: the image's", snapshotImage, restarted, 40, "alice", "snapshot-alice"},
		{"no start credentials: the image's", snapshotImage, nil, 0, "alice", "snapshot-alice"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			lookup := scramLookup(func() *metadata.Image { return tt.image }, func() int64 { return tt.applied }, tt.start)
			cred, ok := lookup(transport.MechanismScramSHA512, tt.user)
			if got := string(cred.Salt); ok != (tt.salt != "") || got != tt.salt {
				t.Errorf("lookup(%s) = %q, %v; want %q", tt.user, got, ok, tt.salt)
			}
			if _, ok := lookup(transport.MechanismScramSHA256, tt.user); ok {
				t.Errorf("lookup(%s) found a SCRAM-SHA-256 credential; only SCRAM-SHA-512 ones exist", tt.user)
			}
		})
	}
}
