package krafttest

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/krabka-go/krabka/internal/kraft"
)

// InteractionEnv drives several [kraft.Node]s over an in-memory network
// from datadriven scripts; see the package documentation for the commands.
type InteractionEnv struct {
	Nodes   []*Node
	Network []kraft.Message
	// isolated nodes can only talk among themselves.
	isolated   []kraft.NodeID
	out        strings.Builder
	level      slog.LevelVar
	logger     *slog.Logger
	nextHandle kraft.RecordsHandle
	catalog    map[kraft.OffsetAndEpoch][]kraft.ReplicaKey
}

// Node is one harness node: the core plus what its disk holds.
type Node struct {
	*kraft.Node
	ID     kraft.NodeID
	Config kraft.Config
	Log    *MemLog
	// State is the durable quorum state (what the last Ready persisted).
	State kraft.ElectionState
	Now   kraft.Instant
	Down  bool
	// FetchLimit caps the batches this node's runtime puts in one Fetch
	// response (0: no cap).
	FetchLimit int
}

// NewInteractionEnv returns an empty environment.
func NewInteractionEnv() *InteractionEnv {
	env := &InteractionEnv{catalog: map[kraft.OffsetAndEpoch][]kraft.ReplicaKey{}}
	env.level.Set(slog.LevelInfo)
	env.logger = slog.New(slog.NewTextHandler(&env.out, &slog.HandlerOptions{
		Level: &env.level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	return env
}

// Handle runs one datadriven command and returns its transcript.
func (env *InteractionEnv) Handle(t testing.TB, td *datadriven.TestData) string {
	env.out.Reset()
	if err := env.handle(t, td); err != nil {
		fmt.Fprintf(&env.out, "error: %v\n", err)
	}
	s := env.out.String()
	if s == "" {
		return "ok\n"
	}
	return s
}

func (env *InteractionEnv) printf(format string, args ...any) { fmt.Fprintf(&env.out, format, args...) }

func (env *InteractionEnv) handle(t testing.TB, td *datadriven.TestData) error {
	ids, err := env.idArgs(td)
	if err != nil {
		return err
	}
	switch td.Cmd {
	case "add-nodes":
		return env.addNodes(t, td)
	case "tick":
		var ms int64
		td.ScanArgs(t, "ms", &ms)
		for _, n := range env.select_(ids) {
			n.Now += kraft.Instant(ms)
			n.Tick(n.Now)
		}
	case "next-deadline":
		for _, n := range env.select_(ids) {
			n.Now = max(n.Now, n.NextDeadline())
			n.Tick(n.Now)
		}
	case "campaign":
		for _, n := range env.select_(ids) {
			st := n.Status()
			for range 20 {
				if d := n.NextDeadline(); d != kraft.Never {
					n.Now = max(n.Now, d)
				}
				n.Tick(n.Now)
				if now := n.Status(); now.Role != st.Role || now.Epoch != st.Epoch {
					break
				}
			}
		}
	case "deliver-msgs":
		var typ string
		if td.HasArg("type") {
			td.ScanArgs(t, "type", &typ)
		}
		var drop []kraft.NodeID
		if arg, ok := td.Arg("drop"); ok {
			for _, v := range arg.Vals {
				id, err := strconv.Atoi(v)
				if err != nil {
					return err
				}
				drop = append(drop, kraft.NodeID(id))
			}
		}
		from := kraft.NoNode
		if td.HasArg("from") {
			var f int
			td.ScanArgs(t, "from", &f)
			from = kraft.NodeID(f)
		}
		if env.deliver(ids, typ, from, drop) == 0 {
			env.printf("no messages\n")
		}
	case "process-ready":
		if env.processReady(ids) == 0 {
			env.printf("no ready\n")
		}
	case "stabilize":
		for i := 0; ; i++ {
			if i == 1000 {
				return errors.New("not stable after 1000 rounds")
			}
			if env.processReady(ids)+env.deliver(ids, "", kraft.NoNode, nil) == 0 {
				break
			}
		}
	case "partition":
		env.isolated = ids
		env.printf("isolated %v\n", ids)
	case "heal":
		env.isolated = nil
	case "crash":
		for _, n := range env.select_(ids) {
			n.Down = true
			n.Node = nil
			env.printf("crashed %d\n", n.ID)
		}
	case "restart":
		for _, n := range env.select_(ids) {
			if err := env.start(n); err != nil {
				return err
			}
		}
	case "propose":
		count, records := 1, 1
		td.MaybeScanArgs(t, "n", &count)
		td.MaybeScanArgs(t, "records", &records)
		for _, n := range env.select_(ids) {
			for range count {
				env.nextHandle++
				b, err := n.Propose(n.Now, kraft.Proposal{Records: records, Handle: env.nextHandle})
				if err != nil {
					env.printf("%d: propose: %v\n", n.ID, err)
					break
				}
				env.printf("%d: proposed %s\n", n.ID, b)
			}
		}
	case "propose-voters":
		keys, err := keysArg(td, "voters")
		if err != nil {
			return err
		}
		for _, n := range env.select_(ids) {
			env.nextHandle++
			b, err := n.Propose(n.Now, kraft.Proposal{Records: 1, Handle: env.nextHandle, Voters: keys})
			if err != nil {
				env.printf("%d: propose: %v\n", n.ID, err)
				continue
			}
			env.printf("%d: proposed %s\n", n.ID, b)
		}
	case "update-voter":
		var from, lo, hi int
		td.ScanArgs(t, "from", &from)
		td.ScanArgs(t, "min", &lo)
		td.ScanArgs(t, "max", &hi)
		key := kraft.ReplicaKey{ID: kraft.NodeID(from), DirectoryID: DirectoryID(kraft.NodeID(from))}
		if td.HasArg("dir") {
			var dir int
			td.ScanArgs(t, "dir", &dir)
			key.DirectoryID = DirectoryID(kraft.NodeID(dir))
		}
		for _, n := range env.select_(ids) {
			if err := n.NoteVoterUpdate(n.Now, key, int16(lo), int16(hi)); err != nil {
				env.printf("%d: update-voter: %v\n", n.ID, err)
				continue
			}
			env.printf("%d: noted voter %s kraft.version [%d, %d]\n", n.ID, key, lo, hi)
		}
	case "upgrade-kraft":
		level := 1
		td.MaybeScanArgs(t, "level", &level)
		for _, n := range env.select_(ids) {
			voters, err := n.PlanKRaftUpgrade(int16(level))
			switch {
			case err != nil:
				env.printf("%d: upgrade: %v\n", n.ID, err)
				continue
			case voters == nil:
				env.printf("%d: kraft.version is %d already\n", n.ID, level)
				continue
			case td.HasArg("validate"):
				env.printf("%d: upgrade valid, voters %s\n", n.ID, keyString(voters))
				continue
			}
			env.nextHandle++
			b, err := n.Propose(n.Now, kraft.Proposal{Records: 2, Handle: env.nextHandle, Voters: voters, KRaftVersion: int16(level)})
			if err != nil {
				env.printf("%d: propose: %v\n", n.ID, err)
				continue
			}
			env.printf("%d: proposed %s\n", n.ID, b)
		}
	case "resign":
		for _, n := range env.select_(ids) {
			n.Resign(n.Now)
		}
	case "connection-lost":
		var peer int
		td.ScanArgs(t, "peer", &peer)
		for _, n := range env.select_(ids) {
			n.ConnectionLost(n.Now, kraft.NodeID(peer))
		}
	case "read":
		var id uint64
		td.ScanArgs(t, "id", &id)
		for _, n := range env.select_(ids) {
			if err := n.ReadIndex(n.Now, kraft.ReadID(id)); err != nil {
				env.printf("%d: read %d: %v\n", n.ID, id, err)
				continue
			}
			env.printf("%d: read %d registered\n", n.ID, id)
		}
	case "compact":
		var offset int64
		var size int64 = 100
		td.ScanArgs(t, "offset", &offset)
		td.MaybeScanArgs(t, "size", &size)
		for _, n := range env.select_(ids) {
			id, err := n.Log.CreateSnapshot(kraft.Offset(offset), size)
			if err != nil {
				return err
			}
			env.printf("%d: snapshot %s\n", n.ID, id)
		}
	case "fetch-limit":
		var b int
		td.ScanArgs(t, "batches", &b)
		for _, n := range env.select_(ids) {
			n.FetchLimit = b
		}
	case "log":
		for _, n := range env.select_(ids) {
			env.printf("%d:\n%s", n.ID, indent(n.Log.String()))
		}
	case "status":
		for _, n := range env.select_(ids) {
			env.printStatus(n)
		}
	case "log-level":
		if len(td.CmdArgs) != 1 {
			return errors.New("log-level takes one level")
		}
		return env.level.UnmarshalText([]byte(td.CmdArgs[0].Key))
	default:
		return fmt.Errorf("unknown command %q", td.Cmd)
	}
	return nil
}

// idArgs returns the bare numeric arguments (node ids).
func (env *InteractionEnv) idArgs(td *datadriven.TestData) ([]kraft.NodeID, error) {
	var ids []kraft.NodeID
	for _, a := range td.CmdArgs {
		if len(a.Vals) != 0 {
			continue
		}
		id, err := strconv.Atoi(a.Key)
		if err != nil {
			if td.Cmd == "add-nodes" || td.Cmd == "log-level" {
				continue
			}
			return nil, fmt.Errorf("argument %q is not a node id", a.Key)
		}
		ids = append(ids, kraft.NodeID(id))
	}
	return ids, nil
}

// select_ returns the nodes named by ids (all nodes if none), skipping
// crashed ones except for restart.
func (env *InteractionEnv) select_(ids []kraft.NodeID) []*Node {
	var out []*Node
	for _, n := range env.Nodes {
		if len(ids) > 0 && !slices.Contains(ids, n.ID) {
			continue
		}
		if n.Down && len(ids) == 0 {
			continue
		}
		out = append(out, n)
	}
	return out
}

func keysArg(td *datadriven.TestData, key string) ([]kraft.ReplicaKey, error) {
	arg, ok := td.Arg(key)
	if !ok {
		return nil, fmt.Errorf("missing %s=(...)", key)
	}
	var keys []kraft.ReplicaKey
	for _, v := range arg.Vals {
		id, err := strconv.Atoi(v)
		if err != nil {
			return nil, err
		}
		keys = append(keys, kraft.ReplicaKey{ID: kraft.NodeID(id)})
	}
	return keys, nil
}

func (env *InteractionEnv) addNodes(t testing.TB, td *datadriven.TestData) error {
	count, err := strconv.Atoi(td.CmdArgs[0].Key)
	if err != nil {
		return fmt.Errorf("add-nodes: count: %w", err)
	}
	voters, err := keysArg(td, "voters")
	if err != nil {
		return err
	}
	var seed uint64
	td.MaybeScanArgs(t, "seed", &seed)
	dirs := td.HasArg("dirs")
	for range count {
		id := kraft.NodeID(len(env.Nodes) + 1)
		cfg := kraft.DefaultConfig()
		cfg.ID = id
		if dirs {
			cfg.DirectoryID = DirectoryID(id)
		}
		cfg.Voters = voters
		cfg.Seed = seed
		cfg.Logger = env.logger
		n := &Node{ID: id, Config: cfg, Log: &MemLog{Catalog: env.catalog}, State: kraft.ElectionState{LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: kraft.NoNode}}}
		env.Nodes = append(env.Nodes, n)
		if err := env.start(n); err != nil {
			return err
		}
	}
	return nil
}

func (env *InteractionEnv) start(n *Node) error {
	core, err := kraft.NewNode(n.Now, n.Config, n.State, n.Log)
	if err != nil {
		return err
	}
	n.Node, n.Down = core, false
	return nil
}

func (env *InteractionEnv) node(id kraft.NodeID) *Node {
	for _, n := range env.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func (env *InteractionEnv) cut(a, b kraft.NodeID) bool {
	return slices.Contains(env.isolated, a) != slices.Contains(env.isolated, b)
}

// deliver hands queued messages to their targets and returns how many it
// took off the network.
func (env *InteractionEnv) deliver(ids []kraft.NodeID, typ string, from kraft.NodeID, drop []kraft.NodeID) int {
	var keep []kraft.Message
	todo := env.Network
	env.Network = nil
	count := 0
	for _, m := range todo {
		h := kraft.HeaderOf(m)
		if (len(ids) > 0 && !slices.Contains(ids, h.To)) || (typ != "" && kraft.TypeName(m) != typ) || (from != kraft.NoNode && h.From != from) {
			keep = append(keep, m)
			continue
		}
		count++
		to := env.node(h.To)
		switch {
		case slices.Contains(drop, h.To):
			env.printf("dropped: %s\n", m)
		case to == nil || to.Down:
			env.printf("dropped (down): %s\n", m)
		case env.cut(h.From, h.To):
			env.printf("dropped (partition): %s\n", m)
		default:
			env.printf("%s\n", m)
			if err := to.Step(to.Now, m); err != nil {
				env.printf("error: %d: step: %v\n", to.ID, err)
			}
		}
	}
	env.Network = append(keep, env.Network...)
	return count
}

// processReady runs the Ready loop once on each selected node and returns
// how many Readys it handled.
func (env *InteractionEnv) processReady(ids []kraft.NodeID) int {
	count := 0
	for _, n := range env.select_(ids) {
		if n.Down || !n.HasReady() {
			continue
		}
		count++
		rd := n.Ready()
		env.printf("> %d handling Ready\n", n.ID)
		if err := env.apply(n, rd); err != nil {
			env.printf("  error: %v\n", err)
		}
		n.Advance(rd)
		if rd.SyncLater {
			// The log here is durable as written: its fsync completes at once.
			if err := n.LogSynced(0, n.Log.EndOffset()); err != nil {
				env.printf("  error: %v\n", err)
			}
		}
	}
	return count
}

// apply carries out rd in the order of the Ready contract, printing each
// step; "messages before fsync" marks a Ready whose messages may leave
// before its appends are fsynced (SyncLater; the log here has no fsync to
// overlap, and reports itself synced right after Advance).
func (env *InteractionEnv) apply(n *Node, rd kraft.Ready) error {
	if rd.State != nil {
		n.State = *rd.State
		env.printf("  persist %s\n", n.State)
	}
	if rd.TruncateTo >= 0 {
		env.printf("  truncate %d\n", rd.TruncateTo)
	}
	for _, a := range rd.Appends {
		env.printf("  append %s\n", a.Batch)
	}
	for _, w := range rd.SnapshotWrites {
		env.printf("  snapshot-write %s position=%d length=%d\n", w.SnapshotID, w.Position, w.Length)
	}
	if rd.InstallSnapshot.Valid() {
		env.printf("  install-snapshot %s\n", rd.InstallSnapshot)
	}
	if err := n.Log.ApplyReady(rd); err != nil {
		return err
	}
	if rd.SyncLater && len(rd.Appends) > 0 && len(rd.Messages) > 0 {
		env.printf("  messages before fsync\n")
	}
	for _, m := range rd.Messages {
		env.nextHandle++
		n.Log.Fill(m, n.FetchLimit, env.nextHandle)
		env.printf("  send %s\n", m)
		env.Network = append(env.Network, m)
	}
	if rd.HighWatermark >= 0 {
		env.printf("  high-watermark %d\n", rd.HighWatermark)
	}
	for _, r := range rd.Reads {
		env.printf("  %s\n", r)
	}
	return nil
}

func (env *InteractionEnv) printStatus(n *Node) {
	if n.Down {
		env.printf("%d: down\n", n.ID)
		return
	}
	st := n.Status()
	voted := "none"
	if st.VotedKey.IsSet() {
		voted = st.VotedKey.String()
	}
	kind := "voter"
	if !st.IsVoter {
		kind = "observer"
	}
	env.printf("%d: %s %s epoch=%d leader=%d voted=%s hw=%d leo=%d last_epoch=%d voters=%s\n",
		n.ID, st.Role, kind, st.Epoch, st.Leader.LeaderID, voted, st.HighWatermark, st.LogEndOffset, st.LastEpoch, st.Voters)
	for _, r := range st.Replicas {
		k := "observer"
		if r.Voter {
			k = "voter"
		}
		env.printf("  %s %s leo=%d last_fetch=%d caught_up=%d\n", k, r.Key, r.LogEndOffset, r.LastFetch, r.LastCaughtUp)
	}
}

// DirectoryID is the directory id add-nodes gives node id with dirs: a
// UUID whose last byte is the id, so transcripts stay readable.
func DirectoryID(id kraft.NodeID) kraft.UUID {
	var u kraft.UUID
	u[15] = byte(id)
	return u
}

func keyString(ks []kraft.ReplicaKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.String()
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}
