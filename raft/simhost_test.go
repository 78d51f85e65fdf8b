package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// simCluster runs several production engines on the test's goroutine, in
// an order a seed chooses: one clock for all, a network of queued
// messages that it delivers in any order, drops and cuts, a disk of its
// own for each node (a vfs.MemFS) that loses power, and the engines'
// background tasks run between turns. Every request and answer goes
// through Kafka's encoding at the version the sender asked for.
type simCluster struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	clock *manualClock
	nodes []*simNode
	// inFlight are the messages sent and not yet delivered or dropped.
	inFlight []*simMessage
	// ghost is what the invariants remember of the run (simcheck_test.go).
	ghost simGhost
	// crashes and restarts count the power losses and the starts on what
	// survived them.
	crashes, restarts int
	// committed is the ledger of the committed log: the value of every
	// metadata record at its offset, as the first node to apply it read
	// it from its log. Every other node must hold the same there (C5),
	// and it keeps what retention later deletes from the logs.
	committed map[int64][]byte
	// snapshotChunks counts the FetchSnapshot requests delivered; steps
	// the steps taken, healing included; diskFaults the failed writes
	// and fsyncs that stopped a node.
	snapshotChunks, steps, diskFaults int
}

// simNode is one node of a simCluster: its disk, and its engine while it
// is up.
type simNode struct {
	id   NodeID
	addr string
	cfg  Config
	disk *vfs.MemFS
	// c and e are the running incarnation; nil while the node is down.
	c *Controller
	e *engine
	// life counts the node's incarnations: a message names the
	// incarnations it travels between, and one addressed to an
	// incarnation that crashed is lost.
	life  int
	tasks []func(context.Context)
	// open are the replies of requests delivered to this incarnation and
	// not answered yet: a crash loses them, as a closed connection does.
	open []*simReply
	// cut: every message to or from the node is dropped.
	cut bool
	// checked is the offset up to which the ledger compared this node's
	// committed log, across its incarnations.
	checked int64
	// hw is the high watermark this incarnation last reported (C2);
	// newestSnapshot the end offset of the newest snapshot on its disk,
	// across incarnations (S6).
	hw             kraft.Offset
	newestSnapshot kraft.Offset
	// listed is what the engine held when its disk's snapshots were last
	// listed: they change only with it (checkNodes).
	listed snapshotsSeen
	// durable is what its disk holds durably, as the checker knows it;
	// role and epoch are the incarnation's, roleSince when it took them;
	// votersSeen is the voter set it last led with, since votersSince
	// (simcheck_test.go).
	durable     simDurable
	role        kraft.Role
	epoch       kraft.Epoch
	roleSince   time.Time
	votersSeen  string
	votersSince time.Time
	// leaderHW is the highest high watermark this incarnation handed out
	// as a leader.
	leaderHW int64
}

// snapshotsSeen is what a node's snapshots on disk depend on: its
// incarnation, its log start and its newest snapshot. A snapshot is
// taken, installed or deleted by retention only with one of them.
type snapshotsSeen struct {
	life   int
	start  int64
	latest kraft.OffsetAndEpoch
	has    bool
}

func (n *simNode) up() bool { return n.e != nil }

// simMessage is a request on its way to a node, or the answer on its way
// back to the sender's callback.
type simMessage struct {
	from, to         *simNode
	fromLife, toLife int
	req              kmsg.Request
	cb               transport.Callback
	resp             kmsg.Response // set once answered
	// lost is set once the request or its answer was lost: the sender's
	// callback then gets the error its peer sender would report.
	lost bool
}

// errSimLost is what a sender's callback gets for a request lost on the
// way there or back, as a peer sender reports a request timeout.
var errSimLost = errors.New("raft: simulated network lost the request")

// simSender is a peerSender of one incarnation of a simCluster's node.
type simSender struct {
	sc       *simCluster
	from, to *simNode
	fromLife int
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
	if s.from.life == s.fromLife {
		s.sc.checkSent(s.from, s.to, req)
	}
	s.sc.inFlight = append(s.sc.inFlight, &simMessage{
		from: s.from, to: s.to, fromLife: s.fromLife, toLife: s.to.life,
		req: reencodeRequest(s.sc.t, req), cb: cb,
	})
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
	r.forget()
	if vote, ok := r.m.req.(*kmsg.VoteRequest); ok && r.m.to.life == r.m.toLife && r.m.to.up() {
		r.sc.checkVoteAnswer(r.m.to, vote, resp)
	}
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
	r.forget()
	r.sc.lose(r.m)
	return true
}

// forget takes r off its node's open replies.
func (r *simReply) forget() {
	n := r.m.to
	if i := slices.Index(n.open, r); i >= 0 {
		n.open = slices.Delete(n.open, i, i+1)
	}
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

// simMode is what a simulated run exercises besides the network, power
// losses and clients.
type simMode struct {
	// snapshots: the nodes take a snapshot every kilobyte of committed
	// records and keep only a few kilobytes of log and snapshots, so
	// retention moves their log starts and a node that falls behind
	// catches up by FetchSnapshot.
	snapshots bool
	// dynamic: a KIP-853 quorum (kraft.version 1) bootstrapped with the
	// first n-1 nodes as voters and the last as an observer, whose voter
	// set clients change (simWorkload.changeVoters).
	dynamic bool
	// upgrade runs a static quorum whose disks have directory ids, which
	// clients upgrade to kraft.version 1 (simWorkload.upgrade); no seed
	// of modeOf sets it.
	upgrade bool
}

// modeOf is the mode of a seed: odd seeds take snapshots, and seeds 2
// and 3 modulo 4 run a dynamic quorum.
func modeOf(seed uint64) simMode {
	return simMode{snapshots: seed%2 == 1, dynamic: seed%4 >= 2}
}

// newSimCluster starts n nodes, each on a disk of its own, driven by the
// cluster: all voters of a static quorum, or a dynamic quorum of n-1
// voters and an observer (mode.dynamic).
func newSimCluster(t *testing.T, n int, seed uint64, mode simMode) *simCluster {
	t.Helper()
	sc := &simCluster{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed)),
		clock:     &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		committed: map[int64][]byte{},
		ghost: simGhost{
			leaders: map[kraft.Epoch]simIncarnation{},
			votes:   map[simVote]kraft.NodeID{},
			heard:   map[simLink]simHeard{},
		},
	}
	var voters []QuorumVoter
	for i := range n {
		// The voters' addresses only name them: the cluster routes by
		// address, and no byte goes through a socket.
		voters = append(voters, QuorumVoter{ID: NodeID(i + 1), Host: "127.0.0.1", Port: uint16(i + 1)})
	}
	bootstrap := control.NewVotersRecord()
	for i := range n - 1 {
		bootstrap.Voters = append(bootstrap.Voters, votersRecordVoter(NodeID(i+1), uint16(i+1)))
	}
	for i := range n {
		id := NodeID(i + 1)
		cfg := ForTests(id, path.Join("/node", fmt.Sprint(id)))
		cfg.QuorumVoters = voters
		disk := vfs.NewMem()
		if mode.dynamic {
			cfg.QuorumVoters = nil
			// The node advertises the address the voter set names; it
			// listens on a port of its own that nothing dials.
			cfg.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(i + 1)}}
			for _, v := range voters {
				cfg.QuorumBootstrapServers = append(cfg.QuorumBootstrapServers, HostPort{Host: v.Host, Port: v.Port})
			}
			formatDynamic(t, disk, cfg, i < n-1, bootstrap, sc.clock.now)
		}
		if mode.upgrade {
			// meta.properties only: the directory id the upgrade needs;
			// and the address controller.quorum.voters names, which the
			// upgrade's voter set takes from what each node advertises.
			formatDynamic(t, disk, cfg, false, nil, sc.clock.now)
			cfg.AdvertisedListeners = []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(i + 1)}}
		}
		if mode.snapshots {
			cfg.MaxRecordBytesBetweenSnapshots = 1 << 10
			cfg.MaxSnapshotInterval = 0
			cfg.InternalSegmentBytes = 2 << 10
			cfg.MaxRetentionBytes = 6 << 10
			cfg.MaxRetentionTime = -time.Millisecond
			cfg.FetchSnapshotMaxBytes = 512
		}
		sc.nodes = append(sc.nodes, &simNode{id: id, addr: voters[i].Address(), cfg: cfg, disk: disk, newestSnapshot: -1})
	}
	t.Cleanup(sc.finish)
	for _, node := range sc.nodes {
		sc.boot(node)
	}
	return sc
}

// boot starts a new incarnation of n on what its disk holds.
func (sc *simCluster) boot(n *simNode) {
	n.life++
	life := n.life
	c, err := start(sc.t.Context(), n.cfg, startOptions{
		fsys:  n.disk,
		clock: sc.clock,
		seed:  sc.seed*1000 + uint64(n.id)*100 + uint64(life),
		host:  func(task func(context.Context)) { n.tasks = append(n.tasks, task) },
		dialPeer: func(addr string) peerSender {
			return &simSender{sc: sc, from: n, to: sc.byAddr(addr), fromLife: life}
		},
		probe: simProbe{sc: sc, n: n},
	})
	if err != nil {
		sc.t.Fatalf("node %d does not start on what its disk held (incarnation %d, seed %d): %v", n.id, life, sc.seed, err)
	}
	n.c, n.e = c, c.eng
	n.hw = -1
	n.epoch, n.roleSince, n.leaderHW = -1, sc.clock.now, 0
	sc.checkRecovered(n)
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

// crash cuts n's power: the requests it was answering are lost, its
// background tasks never run, and its disk keeps what it had made
// durable plus whatever of the rest a mode the seed picks lets survive.
func (sc *simCluster) crash(n *simNode) {
	for _, r := range slices.Clone(n.open) {
		r.Close()
	}
	n.tasks = nil
	n.disk.ClearFaults()
	sc.notePowerLoss(n)
	n.disk.Crash(sc.rng, crashModes[sc.rng.IntN(len(crashModes))])
	// The log's files fail with vfs.ErrCrashed now, so closing them
	// writes nothing; the listener and the context go with the process.
	n.c.closeAll()
	n.c, n.e = nil, nil
	sc.crashes++
}

// restart starts n again on what survived its crash.
func (sc *simCluster) restart(n *simNode) {
	sc.boot(n)
	sc.restarts++
}

func (sc *simCluster) finish() {
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
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
			busy = n.up() && sc.settleNode(n) || busy
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
		if isDiskFault(err) {
			// The node stops on the failed write or fsync, as its
			// process exits; what it had not synced is lost.
			sc.diskFaults++
			sc.crash(n)
			return true
		}
		if re := (*CommittedReplayError)(nil); errors.As(err, &re) {
			sc.t.Fatalf("C9 a leader validates against its whole log: node %d stopped, its image refuses the committed record at offset %d: %v (seed %d)", n.id, re.Offset, re.Err, sc.seed)
		}
		sc.t.Fatalf("node %d stopped: %v (seed %d)", n.id, err, sc.seed)
	}
	select {
	case out := <-n.e.syncDone:
		if err := n.e.synced(out); isDiskFault(err) {
			sc.diskFaults++
			sc.crash(n)
		} else if err != nil {
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

// armDiskFault makes the next write or fsync of n's disk fail, with EIO
// or a short write and ENOSPC: the engine must stop on it (a failed fsync
// is never retried) and start again on what its disk kept.
func (sc *simCluster) armDiskFault(n *simNode) {
	f := vfs.Fault{Ops: vfs.OpWrite, Err: syscall.EIO, Count: 1}
	switch sc.rng.IntN(3) {
	case 0:
		f.Ops = vfs.OpSync
	case 1:
		f.Err, f.ShortWrite = syscall.ENOSPC, sc.rng.IntN(100)
	}
	n.disk.InjectFault(f)
}

// isDiskFault reports whether err is one armDiskFault injected.
func isDiskFault(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOSPC)
}

// lose loses m: its sender's callback gets errSimLost later, as a peer
// sender reports a request that timed out. The loss is itself in flight
// until delivered; it is never lost.
func (sc *simCluster) lose(m *simMessage) {
	if !m.lost {
		m.lost = true
		sc.inFlight = append(sc.inFlight, m)
	}
}

// deliver hands one message to its receiver: a request to the node's
// engine as its listener would, an answer or a loss to the sender's
// callback. A message to or from a cut node, or to an incarnation that
// crashed, is lost; an answer or a loss for a sender that crashed goes
// nowhere.
func (sc *simCluster) deliver(m *simMessage) {
	if m.lost || m.resp != nil {
		if m.from.life != m.fromLife || !m.from.up() {
			return
		}
	}
	switch {
	case m.lost:
		m.cb(nil, errSimLost)
		return
	case m.from.cut || m.to.cut || m.to.life != m.toLife || !m.to.up():
		sc.lose(m)
		return
	case m.resp != nil:
		m.cb(m.resp, nil)
		return
	}
	e := m.to.e
	reply := &simReply{sc: sc, m: m}
	m.to.open = append(m.to.open, reply)
	switch body := m.req.(type) {
	case *kmsg.VoteRequest, *kmsg.BeginQuorumEpochRequest, *kmsg.EndQuorumEpochRequest, *kmsg.FetchRequest, *kmsg.FetchSnapshotRequest:
		if _, ok := body.(*kmsg.FetchSnapshotRequest); ok {
			sc.snapshotChunks++
		}
		msg, answer, err := wire.KRaftRequest(body, e.clusterID, kraft.NodeID(m.to.id))
		switch {
		case err != nil:
			reply.Close()
		case answer != nil:
			reply.Send(answer)
		default:
			sc.noteDelivered(m.to, msg)
			e.handle(event{request: &inboundRequest{msg: msg, reply: reply, version: body.GetVersion()}})
		}
	case *wire.SubmitChangeRequest:
		if s := receivedSubmission(body, reply.Send); s != nil {
			e.handle(event{submit: s})
		}
	case *kmsg.ApiVersionsRequest:
		reply.Send(wire.AnswerAPIVersions(body, e.rc.featureState(e.pub.image.Load(), e.pub.finalizedKRaftVersion())))
	case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest, *kmsg.UpdateRaftVoterRequest:
		e.handle(event{call: func(e *engine) { e.voterRPC(body, func(resp kmsg.Response) { reply.Send(resp) }) }})
	case *kmsg.UpdateFeaturesRequest:
		e.handle(event{call: func(e *engine) {
			e.updateFeatures(body, func(err error) { reply.Send(wire.AnswerUpdateFeatures(body, err)) })
		}})
	case *wire.ReadImageRequest:
		// Only a node's forwarding connection sends a read barrier.
		r := &readWaiter{forwarded: true, timeout: m.to.cfg.RequestTimeout}
		c := m.to.c
		r.fn = func(img *metadata.Image, err error) { reply.Send(readImageAnswer(body, img, c.QuorumState(), err)) }
		e.handle(event{call: func(e *engine) { e.readImage(r) }})
	default:
		reply.Close()
	}
}

// step takes one action the seed chooses: deliver or drop a message in
// flight, cut or heal a node, cut a node's power or start it again, or
// let time run to the next deadline.
func (sc *simCluster) step() {
	sc.steps++
	sc.settle()
	switch r := sc.rng.Float64(); {
	case len(sc.inFlight) > 0 && r < 0.85:
		i := sc.rng.IntN(len(sc.inFlight))
		m := sc.inFlight[i]
		sc.inFlight = slices.Delete(sc.inFlight, i, i+1)
		// A loss is reported to its sender in the end, as a peer
		// sender's request timeout always fires.
		if !m.lost && sc.rng.Float64() < 0.02 {
			sc.lose(m)
		} else {
			sc.deliver(m)
		}
	case r < 0.87:
		n := sc.nodes[sc.rng.IntN(len(sc.nodes))]
		n.cut = !n.cut
	case r < 0.875:
		if n := sc.nodes[sc.rng.IntN(len(sc.nodes))]; n.up() {
			sc.crash(n)
		}
	case r < 0.885:
		if n := sc.nodes[sc.rng.IntN(len(sc.nodes))]; !n.up() {
			sc.restart(n)
		}
	case r < 0.887:
		if n := sc.nodes[sc.rng.IntN(len(sc.nodes))]; n.up() {
			sc.armDiskFault(n)
		}
	default:
		sc.advance()
	}
	sc.settle()
	sc.checkLeaders()
	sc.checkCommitted()
	sc.checkNodes()
}

// checkNodes checks every running node's own state between steps, under
// the names of docs/reliability.md: its high watermark is within its log
// (C1) and, once known, never goes back within an incarnation (C2); a log start above
// 0 has a snapshot ending exactly there (S2); and its newest snapshot
// never moves to a lower offset, across power losses too (S6). The
// snapshots on disk are listed again only when what they depend on
// changed (snapshotsSeen).
func (sc *simCluster) checkNodes() {
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
		st := n.e.lastStatus
		if st.HighWatermark > st.LogEndOffset {
			sc.t.Fatalf("C1 high watermark bounds: node %d's high watermark %d is above its log end %d (seed %d)", n.id, st.HighWatermark, st.LogEndOffset, sc.seed)
		}
		// An epoch change makes the high watermark unknown (-1) until
		// the leader names it; a known one never goes back.
		if st.HighWatermark >= 0 && st.HighWatermark < n.hw {
			sc.t.Fatalf("C2 high watermark monotonic: node %d's high watermark went back from %d to %d (seed %d)", n.id, n.hw, st.HighWatermark, sc.seed)
		}
		n.hw = max(n.hw, st.HighWatermark)
		start := n.e.log.LogStartOffset()
		seen := snapshotsSeen{life: n.life, start: start, latest: n.e.snap.latest, has: n.e.snap.hasLatest}
		if seen == n.listed {
			continue
		}
		n.listed = seen
		listing, err := snapshot.List(n.disk, n.e.rc.dir)
		if err != nil {
			sc.t.Fatalf("node %d: list its snapshots: %v", n.id, err)
		}
		newest := kraft.Offset(-1)
		covered := false
		for _, si := range listing.Snapshots {
			newest = max(newest, si.ID.Offset)
			covered = covered || int64(si.ID.Offset) == start
		}
		if start > 0 && !covered {
			sc.t.Fatalf("S2 log start at a snapshot: node %d's log starts at %d, where none of its snapshots %v ends (seed %d)", n.id, start, listing.Snapshots, sc.seed)
		}
		if newest < n.newestSnapshot {
			sc.t.Fatalf("S6 newest snapshot never goes back: node %d's newest snapshot ends at %d, below %d it held before (seed %d)", n.id, newest, n.newestSnapshot, sc.seed)
		}
		n.newestSnapshot = newest
	}
}

// checkCommitted compares what every running node has applied since it
// was last checked with the ledger of the committed log, and adds what no
// node applied before: an offset committed once holds the same record on
// every node (C5 in docs/reliability.md).
func (sc *simCluster) checkCommitted() {
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
		n.checked = readCommittedLog(sc.t, n, n.checked, func(off int64, v []byte) {
			if first, ok := sc.committed[off]; !ok {
				sc.committed[off] = bytes.Clone(v)
			} else if !bytes.Equal(first, v) {
				sc.t.Fatalf("C5 committed data is immutable: node %d applied a record at offset %d that differs from the one committed there before (seed %d)", n.id, off, sc.seed)
			}
		})
	}
}

// advance moves the clock to the earliest deadline of any node and ticks
// every node that is due.
func (sc *simCluster) advance() {
	var next time.Time
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
		if at, ok := n.e.wake(); ok && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if next.After(sc.clock.now) {
		sc.clock.now = next
	}
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
		if at, ok := n.e.wake(); ok && !at.After(sc.clock.now) {
			n.e.tick()
		}
	}
}

// leader returns the running node that leads the highest epoch, or nil.
func (sc *simCluster) leader() *simNode {
	var best *simNode
	for _, n := range sc.nodes {
		if !n.up() {
			continue
		}
		st := n.e.lastStatus
		if st.Role == kraft.Leader && !st.ShuttingDown && (best == nil || st.Epoch > best.e.lastStatus.Epoch) {
			best = n
		}
	}
	return best
}

// heal starts every node that is down, reconnects every node and runs,
// without losses, until every node has applied all that the leader
// committed; it fails when they do not get there.
func (sc *simCluster) heal() {
	for _, n := range sc.nodes {
		n.cut = false
		if !n.up() {
			sc.restart(n)
		}
	}
	for range 20000 {
		sc.steps++
		for _, n := range sc.nodes {
			if !n.up() {
				// An armed disk fault stopped it.
				sc.restart(n)
			}
		}
		sc.settle()
		sc.checkLeaders()
		sc.checkCommitted()
		sc.checkNodes()
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
	var b strings.Builder
	for _, n := range sc.nodes {
		if !n.up() {
			fmt.Fprintf(&b, "\n  node %d: down", n.id)
			continue
		}
		st := n.e.lastStatus
		var voters []int32
		if h, ok := n.e.voters.latest(); ok {
			voters = voterIDs(h.rec)
		}
		fmt.Fprintf(&b, "\n  node %d: %s epoch %d leader %d end %d hw %d applied %d voters %v", n.id, st.Role, st.Epoch, st.Leader.LeaderID, st.LogEndOffset, st.HighWatermark, n.e.applier.applied, voters)
		for _, v := range n.e.voters.entries {
			fmt.Fprintf(&b, " [%d: %v]", v.offset, voterIDs(v.rec))
		}
		fmt.Fprintf(&b, " epochs %v", n.e.log.EpochEntries())
	}
	sc.t.Fatalf("L1/L3 liveness: the healed cluster does not converge on a leader with every node caught up (seed %d):%s", sc.seed, b.String())
}

// caughtUp reports whether every node has applied up to the leader's high
// watermark.
func (sc *simCluster) caughtUp(l *simNode) bool {
	hw := l.e.lastStatus.HighWatermark
	for _, n := range sc.nodes {
		if hw < 0 || !n.up() || n.e.applier.applied < hw {
			return false
		}
	}
	return true
}
