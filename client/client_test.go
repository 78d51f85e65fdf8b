package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka-go/krabka/client"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// TestClientFollowsLeaderAcrossKill: a Client bootstrapped with a dead
// address and one follower learns every controller and the leader, submits, reads the
// image linearizably and fetches the committed batches; after the leader
// is killed its submissions reach the new leader and its reads see them.
func TestClientFollowsLeaderAcrossKill(t *testing.T) {
	q := startQuorum(t)
	first := q.leader()
	follower := first%3 + 1
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	cfg := client.DefaultConfig()
	dead := sharedtest.ListenFixed(t)
	deadAddr := dead.Addr().String()
	_ = dead.Close() // nothing listens there: the Client must move on
	cfg.Controllers = []string{deadAddr, q.addrs[follower-1]}
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.Controllers(); len(got) != 3 || got[int32(first)] != q.addrs[first-1] {
		t.Fatalf("Controllers() = %v, want the three nodes at %v", got, q.addrs)
	}
	if id, _ := cl.Leader(); id != int32(first) {
		t.Errorf("Leader() = %d after Dial, want %d", id, first)
	}

	if _, err := cl.SubmitChange(ctx, []metadata.Record{metadataVersion()}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.SubmitChange(ctx, []metadata.Record{topic("before")})
	if err != nil {
		t.Fatal(err)
	}
	checkRead(ctx, t, cl, "before", res)

	resp, err := cl.MetadataFetch(ctx, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := client.DecodeBatches(resp.Records)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range batches {
		for _, r := range b.Records {
			if tr, ok := r.Metadata.(*metadata.TopicRecord); ok && tr.Name == "before" {
				found = r.Offset == res.Offset && b.Epoch == res.Epoch
			}
		}
	}
	if !found || resp.HighWatermark <= res.LastOffset {
		t.Errorf("MetadataFetch: TopicRecord before at offset %d epoch %d found %v, high watermark %d", res.Offset, res.Epoch, found, resp.HighWatermark)
	}

	q.kill(first)
	// The Client still points at the dead leader: a read moves on.
	checkRead(ctx, t, cl, "before", res)
	second := q.leader()
	var after client.SubmitResult
	for i := 0; ; i++ {
		after, err = cl.SubmitChange(ctx, []metadata.Record{topic(fmt.Sprint("after-", i))})
		if err == nil {
			checkRead(ctx, t, cl, fmt.Sprint("after-", i), after)
			break
		}
		// A new name each time: a submission that failed may still commit.
		if !errors.Is(err, client.ErrNotLeader) && !errors.Is(err, client.ErrLeaderUnknown) && !errors.Is(err, client.ErrOutcomeUnknown) {
			t.Fatalf("SubmitChange after the kill: %v", err)
		}
		t.Logf("submission %d after the kill: %v", i, err)
		time.Sleep(10 * time.Millisecond)
	}
	if after.Epoch <= res.Epoch {
		t.Errorf("submission after the kill committed in epoch %d, not after %d", after.Epoch, res.Epoch)
	}
	if id, epoch := cl.Leader(); id != int32(second) || epoch != after.Epoch {
		t.Errorf("Leader() = %d in epoch %d, want %d in %d", id, epoch, second, after.Epoch)
	}
	// errors.Is works against package raft's conditions too.
	if !errors.Is(&client.NotLeaderError{LeaderID: 1}, raft.ErrNotLeader) || client.ErrOutcomeUnknown != raft.ErrOutcomeUnknown {
		t.Error("client's conditions are not raft's")
	}
}

// checkRead reads topic name linearizably and checks the image holds it
// at the offset it committed at or later.
func checkRead(ctx context.Context, t *testing.T, cl *client.Client, name string, res client.SubmitResult) {
	t.Helper()
	req := client.NewReadImageRequest()
	req.Linearizable = true
	req.TopicNames = []string{name, "missing"}
	img, err := cl.ReadImage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if img.Offset < res.LastOffset || img.Topics[0].PartitionCount != 0 || img.Topics[0].TopicID != topic(name).TopicId || img.Topics[1].PartitionCount != -1 {
		t.Errorf("ReadImage of %s at offset %d: %+v, want the topic committed at %d and no topic missing", name, img.Offset, img.Topics, res.LastOffset)
	}
}

// TestConfigValidateReportsEveryProblem: Validate names each bad field
// at once.
func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := client.Config{Controllers: []string{"nohost", "h:0"}, SASL: &client.SASL{Mechanism: "GSSAPI"}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad Config")
	}
	for _, want := range []string{`"nohost"`, `"h:0"`, "RequestTimeout", "RetryBackoff", "MaxFrameSize", "GSSAPI"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, lacks %s", err, want)
		}
	}
	if err := (client.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "Controllers is empty") {
		t.Errorf("Validate of the zero Config = %v", err)
	}
	good := client.DefaultConfig()
	good.Controllers = []string{"127.0.0.1:9093"}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate of the defaults with one controller: %v", err)
	}
}

// TestBadArguments: calls that cannot be made fail before anything is
// sent.
func TestBadArguments(t *testing.T) {
	srv := newFakeController(t, nil)
	cl := dialFake(t, srv)
	ctx := t.Context()
	if _, err := cl.SubmitChange(ctx, nil); !errors.Is(err, client.ErrInvalidChange) {
		t.Errorf("SubmitChange(nil) = %v, want ErrInvalidChange", err)
	}
	bad := metadata.NewTopicRecord()
	bad.Version = 99
	if _, err := cl.SubmitChange(ctx, []metadata.Record{bad}); !errors.Is(err, client.ErrInvalidChange) {
		t.Errorf("SubmitChange of a record at version 99 = %v, want ErrInvalidChange", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := cl.SubmitChange(done, []metadata.Record{topic("never")}); !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("SubmitChange with a cancelled context = %v, want context.Canceled (nothing was sent)", err)
	}
	if _, err := cl.ReadImage(ctx, nil); err == nil {
		t.Error("ReadImage(nil) succeeded")
	}
	if _, err := cl.MetadataFetch(ctx, -1, 10); err == nil {
		t.Error("MetadataFetch at offset -1 succeeded")
	}
	if got := srv.requests(); slices.Contains(got, client.KeySubmitChange) || slices.Contains(got, client.KeyReadImage) || slices.Contains(got, client.KeyMetadataFetch) {
		t.Errorf("the controller received %v", got)
	}
	cl.Close()
	if _, err := cl.ReadImage(ctx, client.NewReadImageRequest()); !errors.Is(err, client.ErrClosed) {
		t.Errorf("ReadImage after Close = %v, want ErrClosed", err)
	}
	if _, err := cl.SubmitChange(ctx, []metadata.Record{topic("late")}); !errors.Is(err, client.ErrClosed) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("SubmitChange after Close = %v, want ErrClosed (nothing was sent)", err)
	}
}

// TestDialSeam: every connection goes through Config.Dial, the seam for
// proxies and in-memory networks; a Config.Dial that always fails makes
// Dial try again until ctx ends, then return ErrUnreachable with the
// cause.
func TestDialSeam(t *testing.T) {
	srv := newFakeController(t, nil)
	var dials atomic.Int32
	cfg := client.DefaultConfig()
	cfg.Controllers = []string{srv.addr()}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	cl, err := client.Dial(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if dials.Load() == 0 {
		t.Error("Dial never used Config.Dial")
	}

	refused := errors.New("no route in this test")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var failed atomic.Int32
	cfg.Dial = func(context.Context, string, string) (net.Conn, error) {
		if failed.Add(1) == 3 {
			cancel() // give up during the third attempt
		}
		return nil, refused
	}
	_, err = client.Dial(ctx, cfg)
	if !errors.Is(err, client.ErrUnreachable) || !errors.Is(err, refused) || !errors.Is(err, context.Canceled) {
		t.Errorf("Dial through a failing dialer = %v, want ErrUnreachable wrapping the cause and the cancellation", err)
	}
}

// TestMetadataFetchBelowLogStart: once the controller compacted its log
// into a snapshot, a fetch from offset 0 answers with the snapshot's id
// and no records, and a fetch from the log start returns batches.
func TestMetadataFetchBelowLogStart(t *testing.T) {
	cfg := raft.ForTests(1, t.TempDir())
	cfg.MaxRecordBytesBetweenSnapshots = 2 << 10
	cfg.InternalSegmentBytes = 4 << 10
	cfg.MaxRetentionBytes = 1
	ctx, ccfg := startSingle(t, cfg)
	cl, err := client.Dial(ctx, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var resp *client.MetadataFetchResponse
	for i := 0; resp == nil || resp.LogStartOffset == 0; i++ {
		var recs []metadata.Record
		for j := range 5 {
			recs = append(recs, topic(fmt.Sprintf("t-%d-%d", i, j)))
		}
		if _, err := cl.SubmitChange(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if resp, err = cl.MetadataFetch(ctx, 0, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	if resp.SnapshotID.EndOffset < resp.LogStartOffset || resp.SnapshotID.Epoch < 0 || len(resp.Records) != 0 {
		t.Errorf("fetch from 0 below log start %d: snapshot %+v, %d record bytes", resp.LogStartOffset, resp.SnapshotID, len(resp.Records))
	}
	from, err := cl.MetadataFetch(ctx, resp.LogStartOffset, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := client.DecodeBatches(from.Records)
	if err != nil || len(batches) == 0 || batches[0].BaseOffset > resp.LogStartOffset {
		t.Errorf("fetch from the log start %d: %d batches (first %+v), %v", resp.LogStartOffset, len(batches), batches, err)
	}
}
