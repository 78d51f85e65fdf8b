package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/internal/wire"
)

// treeOf prints "tree" of paths over the tree of si, as the shell does.
func treeOf(si shellImage, paths ...string) string {
	st := newShellState(shellRoot(si), false)
	var w strings.Builder
	st.run(&w, parseShellCommand(append([]string{"tree"}, paths...), false))
	return w.String()
}

// TestMetadataShellLiveQuorum reads a live three-voter quorum whose
// topics are partly in a snapshot and partly in the log after it, through
// each of its nodes, and compares the tree with the leader's image.
func TestMetadataShellLiveQuorum(t *testing.T) {
	s := newSnapshotSource(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	img, err := s.ctls[s.leader].ReadImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := treeOf(shellImage{img: img}, "/image/topics", "/image/features", "/image/cluster", "/image/producerIds")
	for i := range s.ctls {
		r := mustSucceed(t, "metadata-shell", "--bootstrap-controller", s.addr(i), "tree", "/image/topics", "/image/features", "/image/cluster", "/image/producerIds")
		if r.stdout != want {
			t.Errorf("through node %d:\n%s\nwant:\n%s", i+1, r.stdout, want)
		}
	}
	r := mustSucceed(t, "metadata-shell", "--bootstrap-controller", s.addr(0)+","+s.addr(1), "ls", "/image/topics/byName")
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("topic-%d", i))
	}
	if r.stdout != strings.Join(names, "\n")+"\n" {
		t.Errorf("ls /image/topics/byName = %q", r.stdout)
	}
	r = mustSucceed(t, "metadata-shell", "--bootstrap-controller", s.addr(2), "cat", "/image/provenance")
	if !strings.HasPrefix(r.stdout, fmt.Sprintf("offset %d, epoch %d, time ", img.Offset(), img.Epoch())) {
		t.Errorf("provenance %q, want offset %d epoch %d", r.stdout, img.Offset(), img.Epoch())
	}
}

// TestAppendThenShell appends a topic and its partition to a live quorum
// with metadata-quorum append (through a follower, with --json and with
// --file), reads them back with the shell, and checks that a record
// replay rejects is refused with the leader's reason.
func TestAppendThenShell(t *testing.T) {
	q := newQuorumNodes(t, 3)
	for _, n := range q.nodes {
		mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	}
	q.start(t)
	follower := q.addr((q.leader + 1) % 3)
	topic := `{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"b3JkZXJzLXRvcGljLWlkAA"}}`
	part := `{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":0,"topicId":"b3JkZXJzLXRvcGljLWlkAA","replicas":[1],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0}}`
	r := mustSucceed(t, "metadata-quorum", "--bootstrap-controller", follower, "append", "--json", topic, "--json", part)
	m := regexp.MustCompile(`^Committed 2 records at offset (\d+) in epoch (\d+)\.\n$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("append printed %q", r.stdout)
	}
	offset, _ := strconv.ParseInt(m[1], 10, 64)

	r = mustSucceed(t, "metadata-shell", "--bootstrap-controller", follower, "cat", "/image/topics/byName/orders/0", "/image/topics/byName/orders/id", "/image/provenance")
	want := "PartitionRegistration(replicas=[1], directories=[AAAAAAAAAAAAAAAAAAAAAg], isr=[1], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=0, partitionEpoch=0)\n" +
		"b3JkZXJzLXRvcGljLWlkAA\n" +
		fmt.Sprintf("offset %d, epoch %s, time ", offset+1, m[2])
	if !strings.HasPrefix(r.stdout, want) {
		t.Errorf("shell printed:\n%s\nwant it to start with:\n%s", r.stdout, want)
	}

	file := filepath.Join(t.TempDir(), "records.json")
	second := strings.ReplaceAll(strings.ReplaceAll(topic, "orders", "events"), "b3JkZXJzLXRvcGljLWlkAA", "ZXZlbnRzLXRvcGljLWlkAA")
	if err := os.WriteFile(file, []byte("\n"+second+"\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustSucceed(t, "metadata-quorum", "--bootstrap-controller", q.addr(q.leader), "append", "--file", file)
	if !strings.HasPrefix(r.stdout, "Committed 1 record at offset ") {
		t.Errorf("append --file printed %q", r.stdout)
	}
	r = mustSucceed(t, "metadata-shell", "--bootstrap-controller", follower, "ls", "/image/topics/byName")
	if r.stdout != "events\norders\n" {
		t.Errorf("ls /image/topics/byName = %q", r.stdout)
	}

	// A partition of a topic the image does not hold is refused by replay.
	orphan := strings.ReplaceAll(part, "b3JkZXJzLXRvcGljLWlkAA", "bm8tc3VjaC10b3BpYy1pZA")
	mustFail(t, "refused the records (INVALID_REQUEST): raft: invalid metadata change: metadata: replay PartitionRecord at offset", "metadata-quorum", "--bootstrap-controller", follower, "append", "--json", orphan)
	// The refused change left the image alone.
	r = mustSucceed(t, "metadata-shell", "--bootstrap-controller", follower, "find", "/image/topics/byId")
	if strings.Count(r.stdout, "\n") != 1+2*3+1 {
		t.Errorf("find /image/topics/byId after the refusal:\n%s", r.stdout)
	}
}

func TestAppendBadInput(t *testing.T) {
	bc := []string{"metadata-quorum", "--bootstrap-controller", "127.0.0.1:1", "append"}
	mustFail(t, "append needs at least one record", bc...)
	mustFail(t, "--json 1: dumplog: record JSON", append(bc, "--json", "{")...)
	mustFail(t, `--json 2: dumplog: record JSON: unknown record type "NOPE"`, append(bc, "--json", `{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAg"}}`, "--json", `{"type":"NOPE","version":0,"data":{}}`)...)
	file := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(file, []byte("\n\n{\"type\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "line 3: dumplog: record JSON: type", append(bc, "--file", file)...)
	mustFail(t, "not both", append(bc, "--file", file, "--json", "{}")...)
	mustFail(t, "--file: open", append(bc, "--file", file+".missing")...)
	mustFail(t, "--bootstrap-controller is required", "metadata-quorum", "append", "--json", "{}")
}

// fakeLeader answers as the leader of a quorum whose metadata is the
// snapshot file snap (may be empty) followed by the log segment seg (may
// be empty), with ReadImage reporting offset barrier. Answers are cut at
// a few batches so that the reader has to ask more than once.
func fakeLeader(t *testing.T, snap, seg string, snapEnd, snapEpoch int32, barrier int64) string {
	t.Helper()
	var snapBytes, segBytes []byte
	var err error
	if snap != "" {
		if snapBytes, err = os.ReadFile(snap); err != nil {
			t.Fatal(err)
		}
	}
	if seg != "" {
		if segBytes, err = os.ReadFile(seg); err != nil {
			t.Fatal(err)
		}
	}
	var self string
	self = fakeController(t, func(r kmsg.Request) kmsg.Response {
		switch r := r.(type) {
		case *kmsg.DescribeClusterRequest:
			host, port, _ := net.SplitHostPort(self)
			p, _ := strconv.Atoi(port)
			return wire.AnswerDescribeCluster(r, "cluster", 1, []wire.ClusterNode{{ID: 1, Host: host, Port: int32(p)}})
		case *wire.ReadImageRequest:
			resp := r.ResponseKind().(*wire.ReadImageResponse)
			resp.LeaderID, resp.LeaderEpoch, resp.Offset = 1, 5, barrier
			return resp
		case *wire.MetadataFetchRequest:
			resp := r.ResponseKind().(*wire.MetadataFetchResponse)
			resp.LeaderID, resp.LeaderEpoch, resp.LogStartOffset = 1, 5, int64(snapEnd)
			if r.FetchOffset < int64(snapEnd) {
				resp.SnapshotID.EndOffset, resp.SnapshotID.Epoch = int64(snapEnd), snapEpoch
				return resp
			}
			var out []byte
			for pos, n := 0, 0; pos < len(segBytes) && n < 50; {
				h, err := recordbatch.PeekHeader(segBytes[pos:])
				if err != nil {
					break
				}
				if h.NextOffset() > r.FetchOffset {
					out = append(out, segBytes[pos:pos+h.Size()]...)
					n++
				}
				pos += h.Size()
			}
			resp.Records = out
			return resp
		case *kmsg.FetchSnapshotRequest:
			resp := kmsg.NewPtrFetchSnapshotResponse()
			p := kmsg.NewFetchSnapshotResponseTopicPartition()
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = int64(snapEnd), snapEpoch
			pos := r.Topics[0].Partitions[0].Position
			end := min(pos+1000, int64(len(snapBytes)))
			p.Position, p.Size, p.Bytes = pos, int64(len(snapBytes)), snapBytes[pos:end]
			topic := kmsg.NewFetchSnapshotResponseTopic()
			topic.Topic = wire.MetadataTopic
			topic.Partitions = append(topic.Partitions, p)
			resp.Topics = append(resp.Topics, topic)
			return resp
		}
		t.Errorf("unexpected request %T", r)
		return r.ResponseKind()
	})
	return self
}

// TestMetadataShellLiveFromSnapshotAndLog reads a leader whose log
// starts at a snapshot (copied with FetchSnapshot in small chunks) and one
// whose records all come from MetadataFetch, and compares each tree with
// the shell's reading of the same Kafka files.
func TestMetadataShellLiveFromSnapshotAndLog(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	snap := filepath.Join(root, "kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint")
	addr := fakeLeader(t, snap, "", 7206, 1, 7205)
	got := mustSucceed(t, "metadata-shell", "--bootstrap-controller", addr, "tree", "/image").stdout
	want := mustSucceed(t, "metadata-shell", "--snapshot", snap, "tree", "/image").stdout
	if got != want {
		t.Errorf("snapshot through FetchSnapshot:\n%s\nwant:\n%s", got, want)
	}

	seg := filepath.Join(root, "kafka42-single-static/__cluster_metadata-0/00000000000000000000.log")
	addr = fakeLeader(t, "", seg, 0, 0, 16955)
	got = mustSucceed(t, "metadata-shell", "--bootstrap-controller", addr, "tree", "/image").stdout
	want = mustSucceed(t, "metadata-shell", "--snapshot", seg, "tree", "/image").stdout
	if got != want {
		t.Errorf("log through MetadataFetch:\n%s\nwant:\n%s", got, want)
	}
}

// TestDevTryLine runs the line krabka dev prints: it creates topic
// "hello" and the shell lists it.
func TestDevTryLine(t *testing.T) {
	d := startDev(t, 3)
	m := regexp.MustCompile(`(?m)^TryIt: +(.+)$`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no TryIt line:\n%s", d.out.String())
	}
	cmds := strings.Split(m[1], " && ")
	if len(cmds) != 2 {
		t.Fatalf("TryIt line %q: want two commands", m[1])
	}
	var outs []string
	for _, c := range cmds {
		words, err := splitShellLine(c)
		if err != nil || len(words) < 2 || words[0] != "krabka" {
			t.Fatalf("TryIt command %q: %v", c, err)
		}
		outs = append(outs, mustSucceed(t, words[1:]...).stdout)
	}
	if !strings.HasPrefix(outs[0], "Committed 1 record at offset ") || outs[1] != "hello\n" {
		t.Errorf("TryIt printed %q", outs)
	}
}
