package multiprocess

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/client"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// TestConditionalSubmissionsAcrossLeaderKill: on three real processes,
// a submission made against an image is appended only while nothing
// changed that image, and a token renewal only to the token read, also
// when the leader that accepted the first of two such submissions is
// killed before the second is sent: the next leader refuses the second
// as the first would have. A broker registration gets its record's
// offset for broker epoch on every node.
func TestConditionalSubmissionsAcrossLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newQuorum(t)
	for id := 1; id <= 3; id++ {
		q.start(id)
	}
	first, _ := q.leader(-1)
	cfg := client.DefaultConfig()
	for id := 1; id <= 3; id++ {
		cfg.Controllers = append(cfg.Controllers, q.nodes[id].addr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// submit retries what may be retried safely: nothing was appended,
	// or the outcome of a conditional submission is unknown (it is
	// refused if it did commit).
	submit := func(recs []metadata.Record, opts ...client.SubmitOption) (client.SubmitResult, error) {
		for {
			res, err := cl.SubmitChange(ctx, recs, opts...)
			switch {
			case ctx.Err() != nil:
				t.Fatalf("submission not answered: %v", err)
			case errors.Is(err, client.ErrNotLeader), errors.Is(err, client.ErrLeaderUnknown),
				errors.Is(err, client.ErrUncommittedTail), errors.Is(err, client.ErrUnreachable),
				len(opts) > 0 && errors.Is(err, client.ErrOutcomeUnknown):
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return res, err
		}
	}
	imageOffset := func() int64 {
		req := client.NewReadImageRequest()
		req.Linearizable = true
		for {
			resp, err := cl.ReadImage(ctx, req)
			if err == nil {
				return resp.Offset
			}
			if ctx.Err() != nil {
				t.Fatalf("ReadImage: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	mv := metadata.NewFeatureLevelRecord()
	mv.Name, mv.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	if _, err := submit([]metadata.Record{mv}); err != nil {
		t.Fatal(err)
	}
	token := func(expires int64) metadata.Record {
		r := metadata.NewDelegationTokenRecord()
		r.TokenId, r.Owner, r.Requester = "t1", "User:alice", "User:alice"
		r.IssueTimestamp, r.MaxTimestamp, r.ExpirationTimestamp = 1, 1<<40, expires
		return r
	}
	// The controllers register themselves meanwhile (KIP-919), which
	// changes the image: read it again until nothing else does.
	var seen int64
	for {
		seen = imageOffset()
		_, err := submit([]metadata.Record{token(10)}, client.IfUnchangedSince(seen), client.IfDelegationToken("t1", nil))
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrImageChanged) {
			t.Fatalf("first submission against offset %d: %v", seen, err)
		}
	}

	if err := q.stop(first, syscall.SIGKILL); err == nil {
		t.Fatalf("node %d exited cleanly after SIGKILL", first)
	}
	second, _ := q.leader(first)
	t.Logf("leader %d killed, %d leads", first, second)
	if _, err := submit([]metadata.Record{token(20)}, client.IfUnchangedSince(seen)); !errors.Is(err, client.ErrImageChanged) {
		t.Fatalf("second submission against offset %d on the next leader: err = %v, want ErrImageChanged", seen, err)
	}
	if _, err := submit([]metadata.Record{token(20)}, client.IfDelegationToken("t1", nil)); !errors.Is(err, client.ErrImageChanged) {
		t.Fatalf("second creation of the token: err = %v, want ErrImageChanged", err)
	}
	read := &metadata.DelegationToken{TokenID: "t1", Owner: "User:alice", Requester: "User:alice", IssueTimestamp: 1, MaxTimestamp: 1 << 40, ExpirationTimestamp: 10}
	if _, err := submit([]metadata.Record{token(20)}, client.IfDelegationToken("t1", read), client.IfUnchangedSince(imageOffset())); err != nil {
		t.Fatalf("renewal of the token read, against a fresh image: %v", err)
	}

	reg := metadata.NewRegisterBrokerRecord()
	reg.BrokerId, reg.IncarnationId[15], reg.BrokerEpoch = 9, 1, 12345
	reg.Features = []metadata.RegisterBrokerRecordBrokerFeature{{Name: metadata.FeatureMetadataVersion, MinSupportedVersion: metadata.MinMetadataVersion, MaxSupportedVersion: metadata.MaxMetadataVersion}}
	for _, f := range metadata.KnownFeatures().Features {
		reg.Features = append(reg.Features, metadata.RegisterBrokerRecordBrokerFeature{Name: f.Name, MinSupportedVersion: f.MinLevel(), MaxSupportedVersion: f.MaxLevel(false)})
	}
	res, err := submit([]metadata.Record{reg})
	if err != nil {
		t.Fatal(err)
	}
	q.start(first)
	for id := 1; id <= 3; id++ {
		waitFor(t, 30*time.Second, "the registration on every node", func() bool {
			r, ok := q.recordAt(id, res.Offset)
			if !ok {
				return false
			}
			got, ok := r.(*metadata.RegisterBrokerRecord)
			if !ok || got.BrokerEpoch != res.Offset {
				t.Fatalf("node %d: record at %d is %+v, want broker 9's registration with broker epoch %d", id, res.Offset, r, res.Offset)
			}
			return true
		}, func() string { return "" })
	}
	for id := 1; id <= 3; id++ {
		if err := q.stop(id, syscall.SIGTERM); err != nil {
			t.Errorf("node %d exited with %v after SIGTERM", id, err)
		}
	}
}

// recordAt returns the metadata record node id has committed at offset,
// read with the private MetadataFetch RPC; false while it has not.
func (q *quorum) recordAt(id int, offset int64) (metadata.Record, bool) {
	req := wire.NewMetadataFetchRequest()
	req.FetchOffset, req.MaxBytes, req.ReplicaID = offset, 1<<20, -1
	resp, err := call(q.nodes[id].addr, req)
	if err != nil {
		return nil, false
	}
	r := resp.(*wire.MetadataFetchResponse)
	if r.ErrorCode != 0 || r.SnapshotID.EndOffset >= 0 {
		return nil, false
	}
	it := recordbatch.NewIterator(nil, r.Records)
	for it.Next() {
		b := it.Batch()
		for i := range b.Records {
			if b.IsControl() || b.RecordOffset(&b.Records[i]) != offset {
				continue
			}
			m, err := metadata.Decode(b.Records[i].Value)
			if err != nil {
				q.t.Fatalf("node %d: record at %d: %v", id, offset, err)
			}
			return m, true
		}
	}
	return nil, false
}

// buildPrevious builds cmd/krabka into dir with the tag krabka_previous:
// the previous release's private RPC versions (SubmitChange version 0
// only, without conditions).
func buildPrevious(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "krabka-previous")
	cmd := exec.Command("go", "build", "-tags", "krabka_previous", "-o", bin, "./cmd/krabka")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags krabka_previous: %v\n%s", err, out)
	}
	return bin
}

// TestMixedVersionUpgrade: a quorum of the previous release is upgraded
// one process at a time under write load. No acknowledged write is lost;
// while the leader runs the previous release a conditional submission is
// refused before it is sent (UNSUPPORTED_VERSION: that leader would
// append it unconditionally), and one that a leader refused is never
// committed; once every process runs this release, conditions work.
func TestMixedVersionUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	q := newQuorum(t)
	current, previous := q.bin, buildPrevious(t, q.dir)
	q.bin = previous
	for id := 1; id <= 3; id++ {
		q.start(id)
	}
	leader, _ := q.leader(-1)
	q.submit(leader, "metadata.version", metadataVersionRecord(t))
	load := q.startLoader(leader%3 + 1)

	cfg := client.DefaultConfig()
	for id := 1; id <= 3; id++ {
		cfg.Controllers = append(cfg.Controllers, q.nodes[id].addr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var accepted, refused []string
	conditional := func(name string) error {
		rec := metadata.NewTopicRecord()
		rec.Name = name
		copy(rec.TopicId[:], name)
		_, err := cl.SubmitChange(ctx, []metadata.Record{rec}, client.IfNoUncommittedTail())
		switch {
		case err == nil:
			accepted = append(accepted, name)
		case errors.Is(err, kerr.UnsupportedVersion), errors.Is(err, client.ErrUncommittedTail):
			refused = append(refused, name)
		}
		return err
	}
	if err := conditional("cas-previous"); !errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("conditional submission to a quorum of the previous release: err = %v, want UNSUPPORTED_VERSION before sending", err)
	}

	for id := 1; id <= 3; id++ {
		if err := q.stop(id, syscall.SIGTERM); err != nil {
			t.Fatalf("node %d exited with %v after SIGTERM", id, err)
		}
		q.bin = current
		q.start(id)
		before := load.count()
		waitFor(t, 30*time.Second, fmt.Sprintf("writes after node %d was upgraded", id), func() bool { return load.count() > before+5 }, func() string {
			out, err := q.krabka("metadata-quorum", "--bootstrap-controller", q.bootstrap(), "--timeout", "5s", "describe", "--replication")
			return fmt.Sprintf("loader via %d; %s %v", load.via, out, err)
		})
		err := conditional(fmt.Sprintf("cas-mixed-%d", id))
		t.Logf("node %d upgraded; a conditional submission: %v", id, err)
	}

	acked := load.halt()
	q.leader(-1)
	waitFor(t, 30*time.Second, "a conditional submission on the upgraded quorum", func() bool {
		err := conditional(fmt.Sprintf("cas-current-%d", len(accepted)+len(refused)))
		return err == nil
	}, func() string { return fmt.Sprintf("refused %v", refused) })

	want := append(acked, accepted...)
	for id := 1; id <= 3; id++ {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d holds every acknowledged write", id), func() bool {
			got, err := q.committedTopics(id)
			if err != nil {
				return false
			}
			have := map[string]bool{}
			for _, g := range got {
				have[g] = true
			}
			for _, r := range refused {
				if have[r] {
					t.Fatalf("node %d: the refused conditional submission %s is committed", id, r)
				}
			}
			for _, w := range want {
				if !have[w] {
					return false
				}
			}
			return true
		}, func() string { return "" })
	}
	t.Logf("%d writes acknowledged under load, conditional submissions accepted %v, refused %v", len(acked), accepted, refused)
	for id := 1; id <= 3; id++ {
		if err := q.stop(id, syscall.SIGTERM); err != nil {
			t.Errorf("node %d exited with %v after SIGTERM", id, err)
		}
	}
}
