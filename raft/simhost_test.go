package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// simCluster runs several production engines on the test's goroutine, in
// an order a seed chooses: one clock for all, a network of queued
// messages that it delivers in any order, drops and cuts, and the
// engines' background tasks run between turns. Every request and answer
// goes through Kafka's encoding at the version the sender asked for.
type simCluster struct {
	t     *testing.T
	rng   *rand.Rand
	clock *manualClock
	nodes []*simNode
	// inFlight are the messages sent and not yet delivered or dropped.
	inFlight []*simMessage
}

// simNode is one engine of a simCluster.
type simNode struct {
	id    NodeID
	addr  string
	c     *Controller
	e     *engine
	tasks []func(context.Context)
	// cut: every message to or from the node is dropped.
	cut bool
}

// simMessage is a request on its way to a node, or the answer on its way
// back to the sender's callback.
type simMessage struct {
	from, to *simNode
	req      kmsg.Request
	cb       transport.Callback
	resp     kmsg.Response // set once answered
	// lost is set once the request or its answer was lost: the sender's
	// callback then gets the error its peer sender would report.
	lost bool
}

// errSimLost is what a sender's callback gets for a request lost on the
// way there or back, as a peer sender reports a request timeout.
var errSimLost = errors.New("raft: simulated network lost the request")

// simSender is a peerSender of a simCluster.
type simSender struct {
	sc       *simCluster
	from, to *simNode
	closed   bool
}

func (s *simSender) Send(req kmsg.Request, cb transport.Callback) bool {
	if s.closed {
		return false
	}
	if req.GetVersion() < 0 {
		api, _ := wire.LookupAPI(req.Key())
		req.SetVersion(api.Max)
	}
	s.sc.inFlight = append(s.sc.inFlight, &simMessage{from: s.from, to: s.to, req: reencodeRequest(s.sc.t, req), cb: cb})
	return true
}

func (s *simSender) Close() { s.closed = true }

// simReply is the reply slot of a delivered request: the answer travels
// back through the network.
type simReply struct {
	sc       *simCluster
	m        *simMessage
	answered bool
}

func (r *simReply) Send(resp kmsg.Response) bool {
	if r.answered {
		return false
	}
	r.answered = true
	resp.SetVersion(r.m.req.GetVersion())
	r.m.resp = reencodeResponse(r.sc.t, r.m.req, resp)
	r.sc.inFlight = append(r.sc.inFlight, r.m)
	return true
}

func (r *simReply) Close() bool {
	if r.answered {
		return false
	}
	r.answered = true
	r.sc.lose(r.m)
	return true
}

// reencodeRequest returns req as the receiver's listener decodes it from
// the frame the sender writes.
func reencodeRequest(t *testing.T, req kmsg.Request) kmsg.Request {
	frame, err := wire.AppendRequest(nil, 1, nil, req)
	if err != nil {
		t.Fatalf("encode %T: %v", req, err)
	}
	got, err := wire.DecodeRequest(frame[4:])
	if err != nil {
		t.Fatalf("decode %T: %v", req, err)
	}
	return got.Body
}

// reencodeResponse returns resp as the sender decodes it from the frame
// the receiver writes.
func reencodeResponse(t *testing.T, req kmsg.Request, resp kmsg.Response) kmsg.Response {
	got, err := wire.DecodeResponse(wire.AppendResponse(nil, 1, resp)[4:], req)
	if err != nil {
		t.Fatalf("decode %T: %v", resp, err)
	}
	return got
}

// newSimCluster starts n voters, each on its own directory, driven by
// the cluster.
func newSimCluster(t *testing.T, n int, seed uint64) *simCluster {
	t.Helper()
	sc := &simCluster{t: t, rng: rand.New(rand.NewPCG(seed, seed)), clock: &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	var voters []QuorumVoter
	for i := range n {
		// The voters' addresses only name them: the cluster routes by
		// address, and no byte goes through a socket.
		voters = append(voters, QuorumVoter{ID: NodeID(i + 1), Host: "127.0.0.1", Port: uint16(i + 1)})
	}
	for i := range n {
		node := &simNode{id: NodeID(i + 1), addr: voters[i].Address()}
		sc.nodes = append(sc.nodes, node)
	}
	for _, node := range sc.nodes {
		cfg := ForTests(node.id, t.TempDir())
		cfg.QuorumVoters = voters
		c, err := start(t.Context(), cfg, startOptions{
			clock: sc.clock,
			seed:  seed + uint64(node.id),
			host:  func(task func(context.Context)) { node.tasks = append(node.tasks, task) },
			dialPeer: func(addr string) peerSender {
				return &simSender{sc: sc, from: node, to: sc.byAddr(addr)}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		node.c, node.e = c, c.eng
	}
	t.Cleanup(sc.finish)
	return sc
}

func (sc *simCluster) byAddr(addr string) *simNode {
	for _, n := range sc.nodes {
		if n.addr == addr {
			return n
		}
	}
	sc.t.Fatalf("no node at %s", addr)
	return nil
}

func (sc *simCluster) finish() {
	for _, n := range sc.nodes {
		for len(n.tasks) > 0 {
			task := n.tasks[0]
			n.tasks = n.tasks[1:]
			task(sc.t.Context())
		}
		n.e.stop(nil)
		close(n.c.done)
		n.c.cancel()
		n.c.wg.Wait()
		n.c.closeAll()
	}
}

// settle runs every node's turns until none has anything left to do at
// the current time.
func (sc *simCluster) settle() {
	for range 10000 {
		busy := false
		for _, n := range sc.nodes {
			busy = sc.settleNode(n) || busy
		}
		if !busy {
			return
		}
	}
	sc.t.Fatal("the cluster does not settle")
}

// settleNode runs one turn of n if it has input or a task; it reports
// whether it did.
func (sc *simCluster) settleNode(n *simNode) bool {
	if done, err := n.e.settle(); done || err != nil {
		if re := (*CommittedReplayError)(nil); errors.As(err, &re) {
			sc.t.Fatalf("C9 a leader validates against its whole log: node %d stopped, its image refuses the committed record at offset %d: %v", n.id, re.Offset, re.Err)
		}
		sc.t.Fatalf("node %d stopped: %v", n.id, err)
	}
	select {
	case out := <-n.e.syncDone:
		if err := n.e.synced(out); err != nil {
			sc.t.Fatal(err)
		}
		return true
	case ev := <-n.e.inbox:
		n.e.handle(ev)
		n.e.takeInbox()
		return true
	default:
	}
	if len(n.tasks) == 0 {
		return false
	}
	task := n.tasks[0]
	n.tasks = n.tasks[1:]
	task(sc.t.Context())
	return true
}

// lose loses m: its sender's callback gets errSimLost later, as a peer
// sender reports a request that timed out.
func (sc *simCluster) lose(m *simMessage) {
	if !m.lost {
		m.lost = true
		sc.inFlight = append(sc.inFlight, m)
	}
}

// deliver hands one message to its receiver: a request to the node's
// engine as its listener would, an answer or a loss to the sender's
// callback. A message to or from a cut node is lost.
func (sc *simCluster) deliver(m *simMessage) {
	switch {
	case m.lost:
		m.cb(nil, errSimLost)
		return
	case m.from.cut || m.to.cut:
		sc.lose(m)
		return
	case m.resp != nil:
		m.cb(m.resp, nil)
		return
	}
	e := m.to.e
	reply := &simReply{sc: sc, m: m}
	switch body := m.req.(type) {
	case *kmsg.VoteRequest, *kmsg.BeginQuorumEpochRequest, *kmsg.EndQuorumEpochRequest, *kmsg.FetchRequest, *kmsg.FetchSnapshotRequest:
		msg, answer, err := wire.KRaftRequest(body, e.clusterID, kraft.NodeID(m.to.id))
		switch {
		case err != nil:
			reply.Close()
		case answer != nil:
			reply.Send(answer)
		default:
			e.handle(event{request: &inboundRequest{msg: msg, reply: reply, version: body.GetVersion()}})
		}
	case *wire.SubmitChangeRequest:
		s, err := decodeSubmission(body.Records)
		if err != nil {
			reply.Send(submitAnswer(body, SubmitResult{}, err))
			return
		}
		s.complete = func(res SubmitResult, err error) { reply.Send(submitAnswer(body, res, err)) }
		e.handle(event{submit: s})
	default:
		reply.Close()
	}
}

// step takes one action the seed chooses: deliver or drop a message in
// flight, cut or heal a node, or let time run to the next deadline.
func (sc *simCluster) step() {
	sc.settle()
	switch r := sc.rng.Float64(); {
	case len(sc.inFlight) > 0 && r < 0.85:
		i := sc.rng.IntN(len(sc.inFlight))
		m := sc.inFlight[i]
		sc.inFlight = slices.Delete(sc.inFlight, i, i+1)
		if sc.rng.Float64() < 0.02 {
			sc.lose(m)
		} else {
			sc.deliver(m)
		}
	case r < 0.87:
		n := sc.nodes[sc.rng.IntN(len(sc.nodes))]
		n.cut = !n.cut
	default:
		sc.advance()
	}
	sc.settle()
}

// advance moves the clock to the earliest deadline of any node and ticks
// every node that is due.
func (sc *simCluster) advance() {
	var next time.Time
	for _, n := range sc.nodes {
		if at, ok := n.e.wake(); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if next.After(sc.clock.now) {
		sc.clock.now = next
	}
	for _, n := range sc.nodes {
		if at, ok := n.e.wake(); ok && !at.After(sc.clock.now) {
			n.e.tick()
		}
	}
}

// leader returns the node that leads the highest epoch, or nil.
func (sc *simCluster) leader() *simNode {
	var best *simNode
	for _, n := range sc.nodes {
		st := n.e.lastStatus
		if st.Role == kraft.Leader && !st.ShuttingDown && (best == nil || st.Epoch > best.e.lastStatus.Epoch) {
			best = n
		}
	}
	return best
}

// checkElectionSafety fails when two nodes lead the same epoch
// (invariant E1 in docs/reliability.md).
func (sc *simCluster) checkElectionSafety() {
	leaders := map[kraft.Epoch]NodeID{}
	for _, n := range sc.nodes {
		st := n.e.lastStatus
		if st.Role != kraft.Leader {
			continue
		}
		if other, ok := leaders[st.Epoch]; ok {
			sc.t.Fatalf("E1 election safety: nodes %d and %d both lead epoch %d", other, n.id, st.Epoch)
		}
		leaders[st.Epoch] = n.id
	}
}

// simAck is a submission a node acknowledged: where its records landed.
type simAck struct {
	res     SubmitResult
	encoded [][]byte
}

// simWorkload is the clients' side of a simulated run.
type simWorkload struct {
	sc          *simCluster
	names       []string
	outstanding int
	acked       []simAck
	// configs counts the config values submitted, each unique, so that
	// the committed log can show one twice.
	configs int
}

// submit sends one change through node n, which forwards it when it is
// not the leader: a topic creation of a few names over and over (the
// image must refuse every name that exists), or a config value of its
// own (which the image always accepts).
func (w *simWorkload) submit(t *testing.T, n *simNode, i int) {
	var recs []metadata.Record
	switch {
	case i%5 == 0:
		w.configs++
		v := fmt.Sprint("v", w.configs)
		r := metadata.NewConfigRecord()
		r.ResourceType, r.Name, r.Value = metadata.ConfigResourceBroker, "key", &v
		recs = []metadata.Record{metadataVersionRecord(), r}
	default:
		recs = []metadata.Record{topicRecord(w.names[w.sc.rng.IntN(len(w.names))])}
	}
	s := &submission{records: recs}
	for _, r := range recs {
		b, err := metadata.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		s.encoded = append(s.encoded, b)
	}
	w.outstanding++
	s.complete = func(res SubmitResult, err error) {
		w.outstanding--
		if err == nil {
			w.acked = append(w.acked, simAck{res: res, encoded: s.encoded})
		}
	}
	n.e.handle(event{submit: s})
}

// runSimWorkload runs steps of the seed's schedule with clients
// submitting through any node, then heals the network and runs until
// every node has applied what the leader committed.
func runSimWorkload(t *testing.T, seed uint64, steps int) (*simCluster, *simWorkload) {
	sc := newSimCluster(t, 3, seed)
	w := &simWorkload{sc: sc, names: []string{"a", "b", "c", "d"}}
	for i := range steps {
		sc.step()
		sc.checkElectionSafety()
		if w.outstanding > 2 || sc.rng.Float64() > 0.2 {
			continue
		}
		n := sc.leader()
		if n == nil || sc.rng.Float64() < 0.3 {
			n = sc.nodes[sc.rng.IntN(len(sc.nodes))]
		}
		w.submit(t, n, i)
	}
	sc.heal()
	return sc, w
}

// heal reconnects every node and runs, without losses, until every node
// has applied all that the leader committed; it fails when they do not
// get there.
func (sc *simCluster) heal() {
	for _, n := range sc.nodes {
		n.cut = false
	}
	for range 20000 {
		sc.settle()
		if l := sc.leader(); l != nil && sc.caughtUp(l) {
			return
		}
		if len(sc.inFlight) == 0 || sc.rng.Float64() < 0.1 {
			sc.advance()
			continue
		}
		m := sc.inFlight[0]
		sc.inFlight = sc.inFlight[1:]
		sc.deliver(m)
	}
	sc.t.Fatal("liveness: the healed cluster does not converge on a leader with every node caught up")
}

// caughtUp reports whether every node has applied up to the leader's high
// watermark.
func (sc *simCluster) caughtUp(l *simNode) bool {
	hw := l.e.lastStatus.HighWatermark
	for _, n := range sc.nodes {
		if hw < 0 || n.e.applier.applied < hw {
			return false
		}
	}
	return true
}

// committedValues returns the value of every committed metadata record in
// n's log, by offset.
func committedValues(t *testing.T, n *simNode) map[int64][]byte {
	out := map[int64][]byte{}
	hw := int64(n.e.applier.applied)
	var dec recordbatch.Decoder
	for off := n.e.log.LogStartOffset(); off < hw; {
		rr, err := n.e.log.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		it := recordbatch.NewIterator(&dec, rr.Batches)
		for it.Next() && off < hw {
			b := it.Batch()
			if !b.IsControl() {
				for i := range b.Records {
					if o := b.RecordOffset(&b.Records[i]); o < hw {
						out[o] = bytes.Clone(b.Records[i].Value)
					}
				}
			}
			off = b.NextOffset()
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkAcknowledged fails unless every acknowledged submission is in
// every node's committed log at the offsets it was acknowledged at, and
// no submission's config value was committed twice (invariants K1 and K2
// in docs/reliability.md).
func (w *simWorkload) checkAcknowledged(t *testing.T, seed uint64) {
	for _, n := range w.sc.nodes {
		log := committedValues(t, n)
		for _, a := range w.acked {
			for i, v := range a.encoded {
				if got, ok := log[a.res.Offset+int64(i)]; !ok || !bytes.Equal(got, v) {
					t.Fatalf("K1 acknowledged writes survive: node %d's committed log lacks record %d of the submission acknowledged at offset %d epoch %d (seed %d)", n.id, i, a.res.Offset, a.res.Epoch, seed)
				}
			}
		}
		seen := map[string]int64{}
		for off, v := range log {
			rec, err := metadata.Decode(v)
			if err != nil {
				t.Fatalf("node %d: committed record at %d: %v", n.id, off, err)
			}
			if c, ok := rec.(*metadata.ConfigRecord); ok && c.Value != nil {
				if first, dup := seen[*c.Value]; dup {
					t.Fatalf("K2 each submission is committed once: node %d committed config value %s at offsets %d and %d (seed %d)", n.id, *c.Value, first, off, seed)
				}
				seen[*c.Value] = off
			}
		}
	}
}

// TestSimulatedEngines: three production engines under a seeded
// schedule of reordered and lost messages, nodes cut off and healed and
// time running, with clients submitting through any node (a follower
// forwards to the leader): no epoch has two leaders (E1); a leader
// validates every change against an image that holds its whole log (C9),
// so no image refuses a committed record, which would stop its node;
// every acknowledged
// submission is in every node's committed log where it was acknowledged
// (K1) and none is committed twice (K2); and once healed, the cluster
// converges. Invariants are named as in docs/reliability.md.
func TestSimulatedEngines(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			_, w := runSimWorkload(t, seed, 3000)
			if len(w.acked) == 0 {
				t.Fatalf("no submission was acknowledged in 3000 steps (seed %d)", seed)
			}
			w.checkAcknowledged(t, seed)
		})
	}
}

// TestSimulatedEnginesAreDeterministic: one seed, one history: two runs
// of the same seed end in the same state on every node.
func TestSimulatedEnginesAreDeterministic(t *testing.T) {
	trace := func() string {
		sc, w := runSimWorkload(t, 3, 1500)
		var b strings.Builder
		fmt.Fprintf(&b, "acknowledged %d\n", len(w.acked))
		for _, n := range sc.nodes {
			st := n.e.lastStatus
			fmt.Fprintf(&b, "node %d: %s epoch %d end %d hw %d applied %d\n", n.id, st.Role, st.Epoch, st.LogEndOffset, st.HighWatermark, n.e.applier.applied)
		}
		return b.String()
	}
	if a, b := trace(), trace(); a != b {
		t.Fatalf("two runs of one seed differ:\n%s\nand\n%s", a, b)
	}
}
