package client_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// quorum is three controllers on loopback TCP, started with raft.Start.
type quorum struct {
	t       *testing.T
	addrs   []string
	nodes   []*raft.Controller
	cancels []context.CancelFunc
}

// startQuorum starts a 3-node static quorum and waits for its leader.
func startQuorum(t *testing.T) *quorum {
	t.Helper()
	q := &quorum{t: t}
	var voters []raft.QuorumVoter
	for i := range 3 {
		ln := sharedtest.ListenFixed(t)
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		_ = ln.Close() // below the ephemeral range: no connection takes it
		voters = append(voters, raft.QuorumVoter{ID: raft.NodeID(i + 1), Host: "127.0.0.1", Port: port})
		q.addrs = append(q.addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	}
	t.Cleanup(func() {
		for i := range q.nodes {
			q.kill(raft.NodeID(i + 1))
		}
	})
	for i := range 3 {
		cfg := raft.ForTests(raft.NodeID(i+1), t.TempDir())
		cfg.Listeners[0].Port = voters[i].Port
		cfg.QuorumVoters = voters
		ctx, cancel := context.WithCancel(context.Background())
		c, err := raft.Start(ctx, cfg)
		if err != nil {
			cancel()
			t.Fatalf("start node %d: %v", i+1, err)
		}
		q.nodes, q.cancels = append(q.nodes, c), append(q.cancels, cancel)
	}
	q.leader()
	return q
}

// kill crashes node id: its context ends and its port closes.
func (q *quorum) kill(id raft.NodeID) {
	n := q.nodes[id-1]
	if n == nil {
		return
	}
	q.nodes[id-1] = nil
	q.cancels[id-1]()
	<-n.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.Shutdown(ctx) // the error is the cancelled context's
}

// leader waits until the running nodes agree on a leader and returns it.
func (q *quorum) leader() raft.NodeID {
	q.t.Helper()
	var leader raft.NodeID
	poll(q.t, "an agreed leader", func() bool {
		leader = -1
		for _, n := range q.nodes {
			if n == nil {
				continue
			}
			st := n.QuorumState()
			if st.LeaderID < 0 || (leader >= 0 && st.LeaderID != leader) {
				return false
			}
			leader = st.LeaderID
		}
		return leader > 0 && q.nodes[leader-1] != nil && q.nodes[leader-1].QuorumState().Role == raft.RoleLeader
	})
	return leader
}

// poll checks cond every few milliseconds until it holds, or fails the
// test after 20 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func metadataVersion() metadata.Record {
	r := metadata.NewFeatureLevelRecord()
	r.Name, r.FeatureLevel = metadata.FeatureMetadataVersion, metadata.MaxMetadataVersion
	return r
}

func topic(name string) *metadata.TopicRecord {
	r := metadata.NewTopicRecord()
	r.Name = name
	h := fnv.New128a()
	fmt.Fprint(h, name)
	copy(r.TopicId[:], h.Sum(nil))
	return r
}
