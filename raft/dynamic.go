package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/snapshot"
)

// Dynamic voter sets (KIP-853, kraft.version 1) in the runtime.
//
// A node whose controller.quorum.voters is empty runs a dynamic quorum:
// the voter set is the newest VotersRecord of its snapshot, its log, or,
// before either holds one, the bootstrap snapshot 0-0 that krabka storage
// format wrote (--standalone, --initial-controllers). The consensus core
// tracks the same history by replica key (id and directory id); the
// runtime keeps the records themselves, because only they carry the
// voters' endpoints, and it keeps them in step with every append,
// truncation and snapshot install. Whenever the set in force changes the
// runtime publishes it (DescribeQuorum, DescribeCluster, the endpoints it
// puts in answers) and drops the connections to nodes that left it;
// connections are opened on first use, to the endpoint a voter advertises
// for the first controller listener.
//
// A node outside the set is an observer: it fetches from one of the
// controller.quorum.bootstrap.servers (the core names them -2, -3, ...,
// as Kafka does), learns the leader's id and endpoint from the answer
// (NodeEndpoints), and follows the leader like a voter follows it, minus
// the vote.

// voterInfo is one voter of the set in force with what its VotersRecord
// entry says: its directory id, every endpoint it advertises, and the
// kraft.version range it supports.
type voterInfo struct {
	id        NodeID
	dir       [16]byte
	endpoints []Endpoint
	minKRaft  int16
	maxKRaft  int16
}

// endpoint returns the voter's endpoint on listener name.
func (v voterInfo) endpoint(name string) (Endpoint, bool) {
	for _, ep := range v.endpoints {
		if ep.Name == name {
			return ep, true
		}
	}
	return Endpoint{}, false
}

// votersEntry is a VotersRecord at the offset the core files it under: a
// log record at its batch's base offset, a snapshot's at its end offset
// minus one (-1 for the bootstrap snapshot).
type votersEntry struct {
	offset kraft.Offset
	rec    *control.VotersRecord
	// bootstrap marks the bootstrap snapshot's set, which the first
	// leader copies into the log.
	bootstrap bool
}

// voterInfos converts a VotersRecord.
func voterInfos(rec *control.VotersRecord) []voterInfo {
	out := make([]voterInfo, 0, len(rec.Voters))
	for _, v := range rec.Voters {
		vi := voterInfo{id: NodeID(v.VoterId), dir: v.VoterDirectoryId,
			minKRaft: v.KRaftVersionFeature.MinSupportedVersion, maxKRaft: v.KRaftVersionFeature.MaxSupportedVersion}
		for _, ep := range v.Endpoints {
			vi.endpoints = append(vi.endpoints, Endpoint{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
		out = append(out, vi)
	}
	return out
}

// keysOf lists the replica keys of a VotersRecord, for the core.
func keysOf(rec *control.VotersRecord) []kraft.ReplicaKey {
	keys := make([]kraft.ReplicaKey, 0, len(rec.Voters))
	for _, v := range rec.Voters {
		keys = append(keys, kraft.ReplicaKey{ID: kraft.NodeID(v.VoterId), DirectoryID: kraft.UUID(v.VoterDirectoryId)})
	}
	return keys
}

// staticVoters is the voter set of controller.quorum.voters.
func staticVoters(rc *runtimeConfig) []voterInfo {
	out := make([]voterInfo, 0, len(rc.voters))
	for _, v := range rc.voters {
		out = append(out, voterInfo{id: v.ID, endpoints: []Endpoint{{Name: rc.listenerName, Host: v.Host, Port: v.Port}}})
	}
	return out
}

// votersRecordOf decodes the VotersRecord of an encoded control batch.
func votersRecordOf(raw []byte) (*control.VotersRecord, error) {
	it := recordbatch.NewIterator(nil, raw)
	for it.Next() {
		b := it.Batch()
		if !b.IsControl() {
			continue
		}
		for i := range b.Records {
			msg, err := control.Decode(b.Records[i].Key, b.Records[i].Value)
			if err != nil {
				var unknown *control.UnknownTypeError
				if errors.As(err, &unknown) {
					continue
				}
				return nil, err
			}
			if v, ok := msg.(*control.VotersRecord); ok {
				return v, nil
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("no VotersRecord in the batch")
}

// loadVoterHistory rebuilds the voter history from disk: the set of the
// newest snapshot (the bootstrap snapshot 0-0 while there is no other),
// then every VotersRecord of the log after it. The core calls it (through
// the LogView) at construction and after a snapshot install. The same
// scan finds the log's latest LeaderChange (latestLeaderChange).
//
// A static quorum (controller.quorum.voters) reads the same history: it
// is empty until the kraft.version upgrade writes the first Voters record
// (upgrade.go), and from then on it is the voter set in force, as Kafka's
// KRaftControlRecordStateMachine ignores the static voters once a
// VotersRecord exists.
func (e *engine) loadVoterHistory() []kraft.VoterSetAt {
	var hist []votersEntry
	id, ok := e.snap.latest, e.snap.hasLatest
	if !ok {
		id = snapshot.Bootstrap
	}
	switch h, err := e.snapshotHeader(id); {
	case err == nil:
		if v := h.Voters; v != nil {
			hist = append(hist, votersEntry{offset: id.Offset - 1, rec: v, bootstrap: id == snapshot.Bootstrap})
		}
	case !errors.Is(err, snapshot.ErrNotFound):
		e.logger.LogAttrs(context.Background(), slog.LevelError, "cannot read the voter set of a snapshot",
			slog.String(logKeySnapshotID, id.String()), slog.String(logKeyError, err.Error()))
	}
	start, end := e.log.LogStartOffset(), e.log.LogEndOffset()
	lc := leaderChangeScan{start: start, end: end}
	// From the log start, not the snapshot: the latest LeaderChange may
	// be below the newest snapshot.
	from := start
	for from < end {
		rr, err := e.log.Read(from, 1<<20)
		if err != nil {
			e.logger.LogAttrs(context.Background(), slog.LevelError, "cannot read the log for voter sets",
				slog.Int64(logKeyOffset, from), slog.String(logKeyError, err.Error()))
			break
		}
		it := recordbatch.NewIterator(&e.dec, rr.Batches)
		next := from
		for it.Next() {
			b := it.Batch()
			next = b.NextOffset()
			if !b.IsControl() {
				continue
			}
			// Below the snapshot, the snapshot's voter set is the later one.
			if b.BaseOffset >= int64(id.Offset) {
				if rec, err := votersRecordOf(b.Raw); err == nil {
					hist = append(hist, votersEntry{offset: kraft.Offset(b.BaseOffset), rec: rec})
				}
			}
			if info, err := summarize(b); err == nil && info.LeaderChange.LeaderID != kraft.NoNode {
				lc = leaderChangeScan{start: start, end: end, batch: info, found: true}
			}
		}
		if next == from {
			break
		}
		from = next
	}
	e.voters.reset(hist)
	e.leaderChange = lc
	out := make([]kraft.VoterSetAt, 0, len(hist))
	for _, h := range hist {
		out = append(out, kraft.VoterSetAt{Offset: h.offset, Voters: keysOf(h.rec)})
	}
	return out
}

// leaderChangeScan is what loadVoterHistory found of the log's latest
// LeaderChange, for the log between start and end.
type leaderChangeScan struct {
	start, end int64
	batch      kraft.BatchInfo
	found      bool
}

// latestLeaderChange answers [kraft.LogView.LatestLeaderChange]. The core
// asks at construction, right after VoterHistory, whose scan of the log
// found it: that scan is reused while the log has not moved since, and
// the log is scanned again otherwise.
func (e *engine) latestLeaderChange() (kraft.BatchInfo, bool) {
	if lc := e.leaderChange; lc.start != e.log.LogStartOffset() || lc.end != e.log.LogEndOffset() {
		e.loadVoterHistory()
	}
	return e.leaderChange.batch, e.leaderChange.found
}

// noteAppendedVoters records the VotersRecord of a batch just appended.
func (e *engine) noteAppendedVoters(base kraft.Offset, raw []byte) {
	rec, err := votersRecordOf(raw)
	if err != nil {
		// The core saw a Voters record in this batch, so it decodes.
		panic(fmt.Sprintf("raft: invariant: appended Voters batch at %d: %v", base, err))
	}
	e.voters.append(votersEntry{offset: base, rec: rec})
}

// voterHistory is the voter-set history of a dynamic quorum as the
// engine's log and newest snapshot hold it, oldest first. Its generation
// counts its changes, so that the engine publishes the voter set once
// per change ([engine.publishVoters]).
type voterHistory struct {
	entries []votersEntry
	// gen counts the changes; published is the generation last
	// published.
	gen, published uint64
}

// reset replaces the history with entries.
func (h *voterHistory) reset(entries []votersEntry) {
	h.entries = entries
	h.gen++
}

// append adds the voter set a batch appended at v.offset holds.
func (h *voterHistory) append(v votersEntry) {
	h.entries = append(h.entries, v)
	h.gen++
}

// truncate drops the voter sets recorded at or after offset.
func (h *voterHistory) truncate(offset kraft.Offset) {
	n := len(h.entries)
	h.entries = slices.DeleteFunc(h.entries, func(v votersEntry) bool { return v.offset >= offset })
	if len(h.entries) != n {
		h.gen++
	}
}

// latest is the newest entry, if any.
func (h *voterHistory) latest() (votersEntry, bool) {
	if len(h.entries) == 0 {
		return votersEntry{}, false
	}
	return h.entries[len(h.entries)-1], true
}

// at is the VotersRecord in force just before offset end (for a snapshot
// ending there), nil if none.
func (h *voterHistory) at(end kraft.Offset) *control.VotersRecord {
	var rec *control.VotersRecord
	for _, v := range h.entries {
		if v.offset < end {
			rec = v.rec
		}
	}
	return rec
}

// takeUnpublished reports whether the history changed since it last
// returned true.
func (h *voterHistory) takeUnpublished() bool {
	if h.gen == h.published {
		return false
	}
	h.published = h.gen
	return true
}

// publishVoters publishes the voter set after it changed and closes the
// connections to nodes that are neither voters nor bootstrap servers nor
// the leader.
func (e *engine) publishVoters() {
	if !e.voters.takeUnpublished() {
		return
	}
	var voters []voterInfo
	kv := int32(0)
	if h, ok := e.voters.latest(); ok {
		voters, kv = voterInfos(h.rec), 1
	} else if !e.rc.dynamic {
		voters = staticVoters(&e.rc)
	}
	if e.rc.dynamic {
		kv = 1
	}
	e.pub.voters.Store(&voters)
	e.pub.kraftVersion.Store(kv)
	for id, p := range e.peers {
		if id <= bootstrapID(0) || id == e.lastStatus.Leader.LeaderID {
			continue
		}
		if addr, ok := e.peerAddr(id); ok && addr == p.addr {
			continue
		}
		p.close()
		delete(e.peers, id)
	}
}

// bootstrapID is the node id the core knows bootstrap server i by.
func bootstrapID(i int) kraft.NodeID { return kraft.NodeID(-2 - i) }

// peerAddr is where node id is reached: a bootstrap server's address, a
// voter's endpoint on the first controller listener, or the endpoint a
// peer named for it.
func (e *engine) peerAddr(id kraft.NodeID) (string, bool) {
	if id <= bootstrapID(0) {
		i := int(bootstrapID(0) - id)
		if i < len(e.rc.bootstrapServers) {
			return e.rc.bootstrapServers[i], true
		}
		return "", false
	}
	if v, ok := e.pub.voterEndpoint(int32(id), e.rc.listenerName); ok {
		return v.Address(), true
	}
	addr, ok := e.learned[id]
	return addr, ok
}

// peerLink is the pair of connections to one node: KRaft requests on one,
// forwarded submissions and voter RPCs on the other.
type peerLink struct {
	addr    string
	raft    peerSender
	forward peerSender
}

func (l *peerLink) close() {
	l.raft.Close()
	l.forward.Close()
}

// link returns the connections to node id, opening them on first use; nil
// when its address is unknown.
func (e *engine) link(id kraft.NodeID) *peerLink {
	if l, ok := e.peers[id]; ok {
		return l
	}
	addr, ok := e.peerAddr(id)
	if !ok || e.dialPeer == nil {
		return nil
	}
	l, err := e.dialPeer(addr)
	if err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "cannot open a connection",
			slog.Int(logKeyPeer, int(id)), slog.String(logKeyAddr, addr), slog.String(logKeyError, err.Error()))
		return nil
	}
	e.peers[id] = l
	return l
}

// learnEndpoints keeps the endpoints an answer named for nodes outside the
// voter set (a leader an observer has yet to see in a VotersRecord).
func (e *engine) learnEndpoints(eps []nodeEndpoint) {
	for _, ep := range eps {
		id := ep.id
		if id < 0 || id == e.rc.id {
			continue
		}
		if old, ok := e.learned[id]; ok && ep.is(old) {
			continue
		}
		addr := ep.addr()
		e.learned[id] = addr
		if l, ok := e.peers[id]; ok && l.addr != addr {
			if cur, ok := e.peerAddr(id); ok && cur != l.addr {
				l.close()
				delete(e.peers, id)
			}
		}
	}
}

// nodeEndpoint is a node's endpoint as a KRaft answer names it.
type nodeEndpoint struct {
	id   kraft.NodeID
	host string
	port int32
}

// addr is the endpoint as host:port.
func (n nodeEndpoint) addr() string { return net.JoinHostPort(n.host, strconv.Itoa(int(n.port))) }

// is reports whether addr (host:port) is the endpoint, without building
// its host:port: the leader names itself in every Fetch answer.
func (n nodeEndpoint) is(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && host == n.host && p == int(n.port)
}

// answerEndpoints appends the node endpoints a KRaft answer carries to
// dst.
func answerEndpoints(resp kmsg.Response, dst []nodeEndpoint) []nodeEndpoint {
	add := func(id int32, host string, port int32) {
		dst = append(dst, nodeEndpoint{id: kraft.NodeID(id), host: host, port: port})
	}
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		for _, b := range r.Brokers {
			add(b.NodeID, b.Host, b.Port)
		}
	case *kmsg.VoteResponse:
		for _, n := range r.NodeEndpoints {
			add(n.NodeID, n.Host, int32(n.Port))
		}
	case *kmsg.BeginQuorumEpochResponse:
		for _, n := range r.NodeEndpoints {
			add(n.NodeID, n.Host, int32(n.Port))
		}
	case *kmsg.EndQuorumEpochResponse:
		for _, n := range r.NodeEndpoints {
			add(n.NodeID, n.Host, int32(n.Port))
		}
	case *kmsg.FetchSnapshotResponse:
		for _, n := range r.NodeEndpoints {
			add(n.NodeID, n.Host, int32(n.Port))
		}
	}
	return dst
}

// voterEndpoint returns voter id's endpoint on listener name from the
// published voter set.
func (p *publishedState) voterEndpoint(id int32, name string) (QuorumVoter, bool) {
	vs := p.voters.Load()
	if vs == nil {
		return QuorumVoter{}, false
	}
	for _, v := range *vs {
		if int32(v.id) != id {
			continue
		}
		if ep, ok := v.endpoint(name); ok {
			return QuorumVoter{ID: v.id, Host: ep.Host, Port: ep.Port}, true
		}
	}
	return QuorumVoter{}, false
}

// voterList is the published voter set.
func (p *publishedState) voterList() []voterInfo {
	if vs := p.voters.Load(); vs != nil {
		return *vs
	}
	return nil
}

// maybeCopyBootstrapVoters makes the first leader of a dynamic quorum
// write the bootstrap snapshot's voter set into the log, with a
// KRaftVersion record of level 1, as Kafka's leader does at the start of
// its epoch: from then on observers learn the set by replication, and
// snapshots carry it.
func (e *engine) maybeCopyBootstrapVoters() {
	st := e.lastStatus
	h, ok := e.voters.latest()
	if !ok || !h.bootstrap || st.Role != kraft.Leader || st.ShuttingDown || e.resigning ||
		e.votersCopiedEpoch == st.Epoch || !e.caughtUp(st.Epoch) || e.node.PendingVoterChange() {
		return
	}
	e.votersCopiedEpoch = st.Epoch
	if _, err := e.proposeVoters(h.rec, 1); err != nil {
		e.logger.LogAttrs(context.Background(), slog.LevelWarn, "bootstrap voter set not appended", slog.String(logKeyError, err.Error()))
	}
}

// proposeVoters appends a Voters control batch holding rec (after a
// KRaftVersion record when kraftVersion > 0) and returns its offset.
func (e *engine) proposeVoters(rec *control.VotersRecord, kraftVersion int16) (kraft.Offset, error) {
	var kvs []recordbatch.KeyValue
	if kraftVersion > 0 {
		kv := control.NewKRaftVersionRecord()
		kv.KRaftVersion = kraftVersion
		key, value, err := control.Encode(kv)
		if err != nil {
			return 0, err
		}
		kvs = append(kvs, recordbatch.KeyValue{Key: key, Value: value})
	}
	key, value, err := control.Encode(rec)
	if err != nil {
		return 0, err
	}
	kvs = append(kvs, recordbatch.KeyValue{Key: key, Value: value})
	p := recordbatch.DefaultParams()
	p.PartitionLeaderEpoch = int32(e.lastStatus.Epoch)
	raw, err := recordbatch.AppendControlBatch(nil, p, e.clock.Now().UnixMilli(), kvs...)
	if err != nil {
		return 0, err
	}
	handle := e.handles.hold(&heldRecords{raw: raw})
	info, err := e.node.Propose(e.now(), kraft.Proposal{Records: len(kvs), Handle: handle, Voters: keysOf(rec), KRaftVersion: kraftVersion})
	if err != nil {
		e.handles.drop(handle)
		return 0, err
	}
	return info.BaseOffset, nil
}

// kraftVersion is the finalized kraft.version: 1 for a dynamic quorum
// and for a static one whose log holds the upgrade (a Voters record), 0
// before. It is the engine's view, as published for ApiVersions.
func (e *engine) kraftVersion() int16 { return e.pub.finalizedKRaftVersion() }

// finalizedKRaftVersion is the kraft.version in force as last published.
func (p *publishedState) finalizedKRaftVersion() int16 { return int16(p.kraftVersion.Load()) }
