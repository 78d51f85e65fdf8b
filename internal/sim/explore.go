package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Bounds limit the exhaustive search. A search that hits none of MaxDepth
// and MaxStates explored every state reachable within the budgets; the
// budgets (proposals, crashes, drops, timer firings, epoch, messages in
// flight) define the small scope that is covered completely.
type Bounds struct {
	Voters    int
	Proposals int // client proposals
	Crashes   int // node crashes (each then restartable)
	Drops     int // message losses
	Ticks     int // timer firings, all nodes together
	Resets    int // reports to a follower that its leader's connection reset (genuine or not)
	Removals  int // Voters records a leader proposes without one voter, itself included
	MaxEpoch  kraft.Epoch
	InFlight  int // states with more messages in flight are not expanded
	MaxDepth  int
	MaxStates int
}

// ExploreResult reports an exhaustive search.
type ExploreResult struct {
	Bounds Bounds
	// States is the number of unique states explored.
	States int
	// Transitions is the number of actions taken (including those leading
	// to already seen states).
	Transitions int
	// MaxDepthSeen is the longest action sequence explored.
	MaxDepthSeen int
	// Cut counts states not expanded because of a scope limit (epoch or
	// messages in flight: the scope's edge) and because of the search
	// caps (depth or state count: incompleteness).
	EpochCut, InFlightCut, DepthCut, StateCut int
	// Sometimes lists each "sometimes" property and whether some state
	// reached it.
	Sometimes map[string]bool
	// Err is the first violation, with the action path that reaches it.
	Err error
}

// Complete reports whether the search explored everything within the
// scope: neither the depth nor the state cap cut it.
func (r ExploreResult) Complete() bool { return r.DepthCut == 0 && r.StateCut == 0 }

// xstate is one state of the exhaustive search.
type xstate struct {
	c     *cluster
	net   []kraft.Message
	props int
	crash int
	drops int
	ticks int
	reset int
	rems  int
	// selfRemovedAt is the number of leader changes when a leader removed
	// itself, -1 before.
	selfRemovedAt int
	path          []string
}

func (s *xstate) clone() *xstate {
	d := &xstate{c: s.c.clone(), net: make([]kraft.Message, len(s.net)), props: s.props, crash: s.crash, drops: s.drops, ticks: s.ticks, reset: s.reset, rems: s.rems, selfRemovedAt: s.selfRemovedAt}
	for i, m := range s.net {
		d.net[i] = copyMessage(m)
	}
	d.path = slices.Clip(s.path)
	d.c.send = func(_ *simNode, m kraft.Message) { d.net = append(d.net, m) }
	return d
}

// msgKey is a message's content as the fingerprint sees it: its printed
// form plus the payloads of the batches it carries (the handle number
// differs between branches that carry the same bytes).
func (s *xstate) msgKey(m kraft.Message) string {
	// String prints every field that varies in the simulator (the rest are
	// configuration constants); the request id is added.
	k := m.String() + "#" + strconv.FormatUint(kraft.HeaderOf(m).RequestID, 10)
	if r, ok := m.(*kraft.FetchResponse); ok {
		for _, e := range s.c.handles.entries[r.Records] {
			k += "/" + strconv.FormatUint(uint64(e.Payload), 16)
		}
	}
	return k
}

func (s *xstate) fingerprint() uint64 {
	h := fnv.New64a()
	var buf []byte
	for _, n := range s.c.nodes {
		buf = binary.AppendVarint(buf[:0], int64(n.id))
		buf = binary.AppendVarint(buf, int64(n.qs.Epoch))
		buf = binary.AppendVarint(buf, int64(n.qs.LeaderID))
		buf = binary.AppendVarint(buf, int64(n.qs.VotedKey.ID))
		buf = binary.AppendVarint(buf, int64(n.hw))
		if n.up() {
			buf = binary.AppendUvarint(buf, n.core.Fingerprint())
		} else {
			buf = append(buf, 0xff)
		}
		h.Write(buf)
		n.log.hash(h)
	}
	// The network as its per-link queues, in link order.
	links := map[[2]kraft.NodeID][]string{}
	for _, m := range s.net {
		hd := kraft.HeaderOf(m)
		l := [2]kraft.NodeID{hd.From, hd.To}
		links[l] = append(links[l], s.msgKey(m))
	}
	keys := make([]string, 0, len(links))
	for l, q := range links {
		keys = append(keys, fmt.Sprintf("%d>%d:%s", l[0], l[1], strings.Join(q, ",")))
	}
	slices.Sort(keys)
	fmt.Fprintf(h, "%s|%d %d %d %d %d %d", strings.Join(keys, "|"), s.props, s.crash, s.drops, s.ticks, s.reset, s.rems)
	return h.Sum64()
}

type xaction struct {
	name string
	do   func(s *xstate) error
}

// actions lists what can happen next in s.
func (s *xstate) actions(b Bounds) []xaction {
	var out []xaction
	// Each link (from, to) is a FIFO, as a TCP connection is: only its
	// oldest message can arrive or be lost next. Reordering happens
	// between links.
	heads := map[[2]kraft.NodeID]bool{}
	for i, m := range s.net {
		h := kraft.HeaderOf(m)
		link := [2]kraft.NodeID{h.From, h.To}
		if heads[link] {
			continue
		}
		heads[link] = true
		out = append(out, xaction{"deliver " + m.String(), func(s *xstate) error {
			m := s.net[i]
			s.net = slices.Delete(s.net, i, i+1)
			to := s.c.node(kraft.HeaderOf(m).To)
			if to == nil || !to.up() {
				return nil
			}
			return s.c.step(to, m)
		}})
		if s.drops < b.Drops {
			out = append(out, xaction{"drop " + m.String(), func(s *xstate) error {
				s.net = slices.Delete(s.net, i, i+1)
				s.drops++
				return nil
			}})
		}
	}
	for _, n := range s.c.nodes {
		id := n.id
		if !n.up() {
			out = append(out, xaction{fmt.Sprintf("restart %d", id), func(s *xstate) error {
				return s.c.restart(s.c.node(id))
			}})
			continue
		}
		if s.ticks < b.Ticks && n.core.NextDeadline() != kraft.Never {
			out = append(out, xaction{fmt.Sprintf("tick %d", id), func(s *xstate) error {
				n := s.c.node(id)
				n.now = max(n.now, n.core.NextDeadline())
				s.ticks++
				return s.c.tick(n)
			}})
		}
		if s.props < b.Proposals && n.role == kraft.Leader {
			out = append(out, xaction{fmt.Sprintf("propose on %d", id), func(s *xstate) error {
				s.props++
				_, err := s.c.propose(s.c.node(id), 1)
				return err
			}})
		}
		if st := n.core.Status(); s.rems < b.Removals && st.Role == kraft.Leader && st.Voters.Len() > 1 && !n.core.PendingVoterChange() {
			for _, v := range st.Voters.Keys() {
				rest := slices.DeleteFunc(st.Voters.Keys(), func(k kraft.ReplicaKey) bool { return k == v })
				out = append(out, xaction{fmt.Sprintf("remove %d on %d", v.ID, id), func(s *xstate) error {
					s.rems++
					if v.ID == id {
						s.selfRemovedAt = s.c.witness.LeaderChanges
					}
					_, err := s.c.proposeVoters(s.c.node(id), rest)
					return err
				}})
			}
		}
		if st := n.core.Status(); s.reset < b.Resets && st.Role == kraft.Follower {
			leader := st.Leader.LeaderID
			out = append(out, xaction{fmt.Sprintf("reset %d->%d", id, leader), func(s *xstate) error {
				s.reset++
				return s.c.connectionLost(s.c.node(id), leader)
			}})
		}
		if s.crash < b.Crashes {
			out = append(out, xaction{fmt.Sprintf("crash %d", id), func(s *xstate) error {
				s.crash++
				s.c.crash(s.c.node(id))
				return nil
			}})
		}
	}
	return out
}

// Explore searches every interleaving of a small cluster depth-first
// within b, deduplicating states by fingerprint, and checks the
// invariants after every action.
func Explore(b Bounds) ExploreResult {
	res := ExploreResult{Bounds: b, Sometimes: map[string]bool{
		"leader elected": false, "log truncated": false,
		"second leader": false, "crash and restart": false,
	}}
	if b.Proposals > 0 {
		res.Sometimes["proposal committed"] = false
	}
	// No campaign jitter: with it, a follower's campaign comes a timer
	// firing after its fetch request expires, and the scope, which counts
	// firings, would no longer reach a second leader's truncation. The
	// jitter changes when a pre-vote starts, not what it may do; TestSim
	// runs with it.
	c, err := newClusterWith(b.Voters, 0, 1, nil, func(cfg *kraft.Config) { cfg.CampaignJitter = 0 })
	if err != nil {
		res.Err = err
		return res
	}
	if b.Removals > 0 {
		res.Sometimes["leader removed itself"] = false
		res.Sometimes["leader elected after a self-removal"] = false
	}
	root := &xstate{c: c, selfRemovedAt: -1}
	root.c.send = func(_ *simNode, m kraft.Message) { root.net = append(root.net, m) }
	visited := map[uint64]struct{}{root.fingerprint(): {}}
	stack := []*xstate{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		res.States++
		res.MaxDepthSeen = max(res.MaxDepthSeen, len(s.path))
		s.witness(&res)
		switch {
		case len(s.path) >= b.MaxDepth:
			res.DepthCut++
			continue
		case s.maxEpoch() > b.MaxEpoch:
			res.EpochCut++
			continue
		case len(s.net) > b.InFlight:
			res.InFlightCut++
			continue
		}
		for _, a := range s.actions(b) {
			if res.States+len(stack) >= b.MaxStates {
				res.StateCut++
				break
			}
			t := s.clone()
			t.path = append(t.path, a.name)
			res.Transitions++
			if err := a.do(t); err != nil {
				res.Err = fmt.Errorf("%w\npath (%d actions):\n  %s", err, len(t.path), strings.Join(t.path, "\n  "))
				return res
			}
			fp := t.fingerprint()
			if _, ok := visited[fp]; ok {
				continue
			}
			visited[fp] = struct{}{}
			stack = append(stack, t)
		}
	}
	return res
}

func (s *xstate) maxEpoch() kraft.Epoch {
	var e kraft.Epoch
	for _, n := range s.c.nodes {
		e = max(e, n.qs.Epoch)
	}
	return e
}

// witness marks the "sometimes" properties s reaches.
func (s *xstate) witness(r *ExploreResult) {
	w := s.c.witness
	if w.LeaderChanges > 0 {
		r.Sometimes["leader elected"] = true
	}
	if w.LeaderChanges > 1 {
		r.Sometimes["second leader"] = true
	}
	if w.Truncations > 0 {
		r.Sometimes["log truncated"] = true
	}
	if w.Restarts > 0 {
		r.Sometimes["crash and restart"] = true
	}
	if s.selfRemovedAt >= 0 {
		r.Sometimes["leader removed itself"] = true
		if w.LeaderChanges > s.selfRemovedAt {
			r.Sometimes["leader elected after a self-removal"] = true
		}
	}
	for _, e := range s.c.chk.committed {
		if !e.Batch.Control {
			r.Sometimes["proposal committed"] = true
		}
	}
}
