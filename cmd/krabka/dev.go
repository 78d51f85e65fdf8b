package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/gctune"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metrics/prom"
	"github.com/krabka-go/krabka/raft"
)

// maxDevNodes bounds --nodes of krabka dev.
const maxDevNodes = 9

// devOptions are the flags of "krabka dev".
type devOptions struct {
	nodes   int
	dir     string
	keep    bool
	verbose bool
	summary time.Duration
}

// devPollInterval is how often krabka dev reads its nodes' quorum state
// to report leader and epoch changes.
const devPollInterval = 200 * time.Millisecond

// newDevCommand builds "krabka dev": a live local quorum for trying
// Kafka's tools against.
func newDevCommand(a *app) *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local quorum of controllers in one process",
		Long: "dev formats and starts --nodes controllers with a static quorum on free\n" +
			"local ports, each with its own server.properties and metadata directory\n" +
			"under --dir, and runs them until SIGINT or SIGTERM. Without --dir it makes\n" +
			"a new temporary directory and removes it at exit (--keep keeps it); a --dir\n" +
			"is never removed, and running again with the same --dir restarts the same\n" +
			"cluster. It prints the quorum, the directory and what happens to it at\n" +
			"exit, the bootstrap servers and each node's admin endpoint (/metrics,\n" +
			"/livez, /readyz), then one line whenever the leader or the epoch changes\n" +
			"and a summary every --summary-interval:\n\n" +
			"  leader=3 epoch=1\n" +
			"  summary leader=3 epoch=1 high_watermark=12 ready=3/3\n\n" +
			"The nodes log warnings and errors on stderr; --verbose adds their INFO\n" +
			"messages (elections, snapshots, connections), --log-level sets the level.\n" +
			"On SIGINT or SIGTERM the leader stops first, resigning to followers that\n" +
			"are still up, then the other nodes stop together; a line \"stopped node=N\"\n" +
			"is printed for each.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDev(ctx, a, o)
		},
	}
	cmd.Flags().IntVar(&o.nodes, "nodes", 3, "number of controllers, 1 to "+strconv.Itoa(maxDevNodes))
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory for the nodes' files (default: a new temporary directory)")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the temporary directory at exit (without --dir)")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "log the nodes' INFO messages on stderr, not only warnings and errors")
	cmd.Flags().DurationVar(&o.summary, "summary-interval", 10*time.Second, "how often to print a one-line summary of the quorum")
	return cmd
}

// freeLocalPorts reserves n distinct free TCP ports on 127.0.0.1. The
// ports are released before the nodes bind them, so another program may
// take one in between; the node then fails to start with a clear error.
func freeLocalPorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// runDev is "krabka dev".
func runDev(ctx context.Context, a *app, o devOptions) error {
	if o.nodes < 1 || o.nodes > maxDevNodes {
		return fmt.Errorf("--nodes %d: want 1 to %d", o.nodes, maxDevNodes)
	}
	if o.summary <= 0 {
		return fmt.Errorf("--summary-interval %v: must be positive", o.summary)
	}
	if o.keep && o.dir != "" {
		return errors.New("--keep applies to the temporary directory: a --dir is always kept")
	}
	defer gctune.Start(gctune.DefaultFloor)() // as server-start does
	dir := o.dir
	fate := "kept at exit"
	if dir == "" {
		d, err := os.MkdirTemp("", "krabka-dev-")
		if err != nil {
			return fmt.Errorf("create a directory for the nodes: %w", err)
		}
		dir = d
		fate = "temporary, kept at exit (--keep)"
		if !o.keep {
			fate = "temporary, removed at exit"
			// Registered first, so it runs after every node stopped.
			defer func() {
				if err := os.RemoveAll(d); err != nil {
					fmt.Fprintf(a.stdout, "could not remove %s: %v\n", d, err)
					return
				}
				fmt.Fprintf(a.stdout, "removed %s\n", d)
			}()
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	ports, err := freeLocalPorts(o.nodes)
	if err != nil {
		return err
	}
	var voters, servers []string
	for i, p := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
		servers = append(servers, fmt.Sprintf("127.0.0.1:%d", p))
	}
	// A directory from an earlier run keeps its cluster id.
	clusterID := ""
	if mp, err := logstore.ReadMetaProperties(vfs.OS(), filepath.Join(dir, "node-1")); err == nil {
		clusterID = mp.ClusterID
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else {
		u, err := randomUUID()
		if err != nil {
			return err
		}
		clusterID = u.String()
	}
	level := slog.LevelWarn
	switch {
	case a.logLevelSet:
		level = a.level
	case o.verbose:
		level = slog.LevelInfo
	}
	nodeLog, err := newLeveledLogger(a.logFormat, a.stderr, level)
	if err != nil {
		return err
	}
	quiet := &app{stdout: a.stderr, stderr: a.stderr, log: nodeLog}
	// Cancelling a node's context stops it abruptly, so it is cancelled
	// only after the graceful Shutdown (defers run last-in first-out).
	nodeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var nodes []*raft.Controller
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		leaders, others := shutdownOrder(nodes)
		for _, i := range leaders {
			_ = nodes[i].Shutdown(sctx) // each node logs its own shutdown problems
			fmt.Fprintf(a.stdout, "stopped node=%d\n", i+1)
		}
		// The others stop together: one of them may have been elected
		// meanwhile, and its resignation then waits for a successor that
		// cannot come; together they wait once, not once each.
		stopped := make(chan int)
		for _, i := range others {
			go func() {
				_ = nodes[i].Shutdown(sctx)
				stopped <- i
			}()
		}
		for range others {
			fmt.Fprintf(a.stdout, "stopped node=%d\n", <-stopped+1)
		}
	}()
	var props, admins []string
	for i, p := range ports {
		id := i + 1
		nodeDir := filepath.Join(dir, "node-"+strconv.Itoa(id))
		path := filepath.Join(dir, "node-"+strconv.Itoa(id)+".properties")
		text := strings.Join([]string{
			"process.roles=controller",
			"node.id=" + strconv.Itoa(id),
			"controller.listener.names=CONTROLLER",
			fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", p),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"metadata.log.dir=" + nodeDir,
		}, "\n") + "\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		props = append(props, path)
		if err := runFormat(quiet, formatOptions{clusterID: clusterID, config: path, ignoreFormatted: true}, time.Now()); err != nil {
			return fmt.Errorf("format node %d: %w", id, err)
		}
		cfg, _, err := raft.LoadConfig(path)
		if err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		cfg.Logger = nodeLog.With("node", id)
		reg, rec, err := newMetricsRegistry()
		if err != nil {
			return err
		}
		cfg.Metrics = rec
		c, err := raft.Start(nodeCtx, cfg)
		if err != nil {
			return fmt.Errorf("start node %d: %w", id, err)
		}
		nodes = append(nodes, c)
		if err := reg.Register(prom.NewListenerCollector(c.ListenerStats)); err != nil {
			return err
		}
		h, err := adminHandler(reg, c, raft.DefaultHealthOptions())
		if err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
		stopAdmin, bound, err := startAdmin("127.0.0.1:0", h)
		if err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
		defer stopAdmin()
		admins = append(admins, "http://"+bound)
	}
	fmt.Fprintf(a.stdout, "ClusterId:              %s\n", clusterID)
	fmt.Fprintf(a.stdout, "Directory:              %s (%s)\n", dir, fate)
	fmt.Fprintf(a.stdout, "QuorumVoters:           %s\n", strings.Join(voters, ","))
	fmt.Fprintf(a.stdout, "BootstrapControllers:   %s\n", strings.Join(servers, ","))
	fmt.Fprintf(a.stdout, "Configs:                %s\n", strings.Join(props, ","))
	fmt.Fprintf(a.stdout, "TryIt:                  %s\n", devTryLine(servers[0]))
	failed := make(chan error, len(nodes))
	for i, u := range admins {
		fmt.Fprintf(a.stdout, "%-24s%s\n", fmt.Sprintf("Admin node %d:", i+1), u)
	}
	for i, c := range nodes {
		go func() {
			select {
			case <-c.Done():
				failed <- fmt.Errorf("node %d stopped: %w", i+1, c.Err())
			case <-nodeCtx.Done():
			}
		}()
	}
	ticker := time.NewTicker(devPollInterval)
	defer ticker.Stop()
	summary := time.NewTicker(o.summary)
	defer summary.Stop()
	last := quorumView{leader: -2}
	for {
		// The NoOpRecords move the high watermark twice a second: only a
		// new leader or epoch gets a line, the summary has the rest.
		if v := viewQuorum(nodes); v.leader != last.leader || v.epoch != last.epoch {
			fmt.Fprintf(a.stdout, "leader=%d epoch=%d\n", v.leader, v.epoch)
			last = v
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case <-ticker.C:
		case <-summary.C:
			v := viewQuorum(nodes)
			fmt.Fprintf(a.stdout, "summary leader=%d epoch=%d high_watermark=%d ready=%d/%d\n",
				v.leader, v.epoch, v.highWatermark, readyNodes(ctx, nodes), len(nodes))
		}
	}
}

// readyNodes counts the nodes that pass their readiness checks, but the
// linearizable read: the summary must not wait on a quorum that cannot
// answer one.
func readyNodes(ctx context.Context, nodes []*raft.Controller) int {
	opts := raft.DefaultHealthOptions()
	opts.Exclude = []string{raft.CheckLinearizableRead}
	n := 0
	for _, c := range nodes {
		if c.Ready(ctx, opts) == nil {
			n++
		}
	}
	return n
}

// quorumView is what krabka dev reports of its quorum: the leader (-1
// when none is known), the newest epoch any node is in and the leader's
// high watermark (-1 when there is no leader or it has committed nothing
// in its epoch).
type quorumView struct {
	leader        raft.NodeID
	epoch         int32
	highWatermark int64
}

// viewQuorum reads the quorum state of every node. A node that is the
// leader of the newest epoch gives the leader and its high watermark.
func viewQuorum(nodes []*raft.Controller) quorumView {
	v := quorumView{leader: -1, epoch: -1, highWatermark: -1}
	for _, c := range nodes {
		st := c.QuorumState()
		if st.Epoch > v.epoch {
			v = quorumView{leader: -1, epoch: st.Epoch, highWatermark: -1}
		}
		if st.Epoch == v.epoch && st.Role == raft.RoleLeader {
			v.leader, v.highWatermark = st.LeaderID, st.HighWatermark
		}
	}
	return v
}

// shutdownOrder splits nodes into the order krabka dev stops them: the
// leaders first, one by one (a node that believes it leads an older epoch
// too), so that each resigns with EndQuorumEpoch to followers that are
// still running, then the others, by index.
func shutdownOrder(nodes []*raft.Controller) (leaders, others []int) {
	for i, c := range nodes {
		if c.QuorumState().Role == raft.RoleLeader {
			leaders = append(leaders, i)
		} else {
			others = append(others, i)
		}
	}
	return leaders, others
}
