package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/raft"
)

// quorumOptions are the flags of "krabka metadata-quorum".
type quorumOptions struct {
	bootstrapControllers string
	bootstrapServers     string
	commandConfig        string
	// commandConfigServer: --command-config is a controller's
	// server.properties (add-controller), not a client properties file.
	commandConfigServer bool
	timeout             time.Duration
	status, replication bool
	humanReadable       bool
	dryRun              bool
	controllerID        int32
	controllerDirID     string
}

// newMetadataQuorumCommand builds "krabka metadata-quorum", Kafka's
// kafka-metadata-quorum.
func newMetadataQuorumCommand(a *app) *cobra.Command {
	var o quorumOptions
	cmd := &cobra.Command{
		Use:   "metadata-quorum --bootstrap-controller HOST:PORT[,...] (describe | add-controller | remove-controller | snapshot save)",
		Short: "Describe or change the metadata quorum (kafka-metadata-quorum)",
		Long: "metadata-quorum asks the controllers of --bootstrap-controller for the\n" +
			"quorum leader (DescribeCluster), then asks the leader to describe the\n" +
			"quorum (DescribeQuorum) and prints the answer in the layout of Kafka's\n" +
			"kafka-metadata-quorum, or to add or remove a controller of a dynamic\n" +
			"quorum (AddRaftVoter, RemoveRaftVoter).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("metadata-quorum needs a subcommand: describe, add-controller, remove-controller or snapshot")
		},
	}
	connectionFlags(cmd, &o)
	describe := &cobra.Command{
		Use:   "describe (--status | --replication [--human-readable])",
		Short: "Print the quorum's status or its replication table",
		Long: "describe --status prints the cluster id, the leader, its epoch and high\n" +
			"watermark, the largest follower lag and the voters and observers.\n" +
			"describe --replication prints one row per replica: the leader, the other\n" +
			"voters, then the observers.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDescribeQuorum(cmd.Context(), a, o)
		},
	}
	f := describe.Flags()
	f.BoolVar(&o.status, "status", false, "print the quorum's status")
	f.BoolVar(&o.replication, "replication", false, "print the replication table")
	f.BoolVar(&o.humanReadable, "human-readable", false, "print the timestamps of --replication as times ago")
	cmd.AddCommand(describe, newAddControllerCommand(a, &o), newRemoveControllerCommand(a, &o), newSnapshotCommand(a, &o), newAppendCommand(a, &o))
	return cmd
}

// runDescribeQuorum is "krabka metadata-quorum describe".
func runDescribeQuorum(ctx context.Context, a *app, o quorumOptions) error {
	switch {
	case o.status == o.replication:
		return errors.New("describe needs exactly one of --status and --replication")
	case o.humanReadable && !o.replication:
		return errors.New("--human-readable is only for --replication")
	}
	addrs, err := o.controllers()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var q quorumInfo
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, clusterID string) (err error) {
		q, err = describeOn(ctx, leader)
		q.clusterID = clusterID
		return err
	})
	var nl *noLeaderError
	if errors.As(err, &nl) && o.status && nl.reached {
		// Without a leader, what each controller believes is the best
		// description of the quorum there is.
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), min(o.timeout, viewTimeout))
		defer vcancel()
		if perr := printNodeViews(a.stdout, collectNodeViews(vctx, addrs)); perr != nil {
			return errors.Join(err, perr)
		}
	}
	if err != nil {
		return err
	}
	if o.status {
		return printQuorumStatus(a.stdout, q)
	}
	return printReplication(a.stdout, q, o.humanReadable, time.Now())
}

// connectionFlags adds to cmd (for it and its subcommands) the flags of
// a command that talks to the controllers: where they are, and how long
// to wait for them.
func connectionFlags(cmd *cobra.Command, o *quorumOptions) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.bootstrapControllers, "bootstrap-controller", "", "comma-separated host:port of controllers to connect to")
	pf.StringVar(&o.bootstrapServers, "bootstrap-server", "", "comma-separated host:port of brokers (not supported: krabka runs controllers only)")
	pf.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for a leader to answer")
	pf.StringVarP(&o.commandConfig, "command-config", "c", "", "a properties file of client settings (security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config); for add-controller, the server.properties of the controller to add, whose client settings are used too")
}

// controllers are the controllers a tool reaches, and how: the
// addresses of --bootstrap-controller and the client security settings
// of --command-config.
type controllers struct {
	addrs    []string
	security raft.ClientSecurity
}

// controllers checks the connection flags and returns the addresses of
// --bootstrap-controller with the client settings of --command-config
// (none when it is a server.properties: its reader sets them).
func (o quorumOptions) controllers() (controllers, error) {
	switch {
	case o.bootstrapServers != "" && o.bootstrapControllers != "":
		return controllers{}, errors.New("only one of --bootstrap-server and --bootstrap-controller can be given")
	case o.bootstrapServers != "":
		return controllers{}, errors.New("--bootstrap-server: krabka runs controllers only; name them with --bootstrap-controller")
	case o.bootstrapControllers == "":
		return controllers{}, errors.New("--bootstrap-controller is required")
	case o.timeout <= 0:
		return controllers{}, fmt.Errorf("--timeout %v: must be positive", o.timeout)
	}
	var cs controllers
	if o.commandConfig != "" && !o.commandConfigServer {
		sec, err := raft.LoadClientConfig(o.commandConfig)
		if err != nil {
			return controllers{}, fmt.Errorf("--command-config %s: %w", o.commandConfig, err)
		}
		cs.security = sec
	}
	var addrs []string
	for _, s := range strings.Split(o.bootstrapControllers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return controllers{}, fmt.Errorf("--bootstrap-controller %q: %w", s, err)
		}
		addrs = append(addrs, s)
	}
	if len(addrs) == 0 {
		return controllers{}, errors.New("--bootstrap-controller names no controller")
	}
	cs.addrs = addrs
	return cs, nil
}

// quorumInfo is what describe prints: the cluster id from DescribeCluster
// and the leader's DescribeQuorum answer for the metadata partition.
type quorumInfo struct {
	clusterID string
	partition kmsg.DescribeQuorumResponseTopicPartition
	nodes     []kmsg.DescribeQuorumResponseNode
}

// leaderAction is what a subcommand asks of the quorum leader.
type leaderAction func(ctx context.Context, leader *controllerConn, clusterID string) error

// withLeader asks the controllers at addrs for the leader and runs f on a
// connection to it. While no leader is known, or f's answer says the
// leader moved or is not ready (an error wrapping errRetry), it asks again
// until ctx ends; controllers that cannot be reached at all fail it at
// once.
//
// Its failure for want of a leader is a *noLeaderError naming each
// address it tried in its last round once, with what it answered.
func withLeader(ctx context.Context, cs controllers, f leaderAction) error {
	addrs := cs.addrs
	var last *noLeaderError
	for {
		nl := &noLeaderError{bootstrap: addrs, reached: last != nil}
		for _, addr := range addrs {
			ok, err := withLeaderVia(ctx, cs.security, addr, f, &nl.tried)
			if err == nil {
				return nil
			}
			nl.reached = nl.reached || ok
			if !errors.Is(err, errRetry) && ok {
				return err
			}
			nl.errs = append(nl.errs, err)
		}
		if ctx.Err() != nil && last != nil {
			// A round cut short by the deadline says less than the one
			// before it.
			return last
		}
		if !nl.reached {
			return nl
		}
		last = nl
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nl
		case <-t.C:
		}
	}
}

// triedAddrs is what each address asked answered, in the order first
// asked; a later outcome for an address replaces its earlier one.
type triedAddrs struct {
	addrs   []string
	outcome map[string]string
}

// note records what addr answered: err, without the address it names.
func (t *triedAddrs) note(addr string, err error) {
	if t.outcome == nil {
		t.outcome = map[string]string{}
	}
	if _, ok := t.outcome[addr]; !ok {
		t.addrs = append(t.addrs, addr)
	}
	t.outcome[addr] = withoutAddr(err, addr)
}

// String lists every address once: "addr (outcome), ...".
func (t *triedAddrs) String() string {
	parts := make([]string, len(t.addrs))
	for i, a := range t.addrs {
		parts[i] = a + " (" + t.outcome[a] + ")"
	}
	return strings.Join(parts, ", ")
}

// withoutAddr is err's text without the mentions of addr this client's
// errors start with, and without errRetry's mark.
func withoutAddr(err error, addr string) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	s := strings.TrimSuffix(err.Error(), ": "+errRetry.Error())
	for _, prefix := range []string{"connect to controller " + addr + ": ", "controller " + addr + ": ", "controller " + addr + " "} {
		s = strings.ReplaceAll(s, prefix, "")
	}
	return s
}

// noLeaderError is withLeader's failure when no quorum leader answered:
// tried names every address of its last round once, with its outcome;
// reached says whether any controller of bootstrap answered at all.
type noLeaderError struct {
	bootstrap []string
	tried     triedAddrs
	errs      []error
	reached   bool
}

func (e *noLeaderError) Error() string {
	if !e.reached {
		return fmt.Sprintf("no controller of --bootstrap-controller %s answered: %s", strings.Join(e.bootstrap, ","), e.tried.String())
	}
	return "no answer from a quorum leader in time: " + e.tried.String()
}

func (e *noLeaderError) Unwrap() []error { return e.errs }

// withLeaderVia asks the controller at addr for the leader, then runs f
// on the leader, noting in tried what each address answered. ok reports
// whether addr answered ApiVersions.
func withLeaderVia(ctx context.Context, sec raft.ClientSecurity, addr string, f leaderAction, tried *triedAddrs) (ok bool, err error) {
	c, err := dialController(ctx, addr, sec)
	if err != nil {
		tried.note(addr, err)
		return false, err
	}
	defer c.Close()
	fail := func(at string, err error) (bool, error) {
		tried.note(at, err)
		return true, err
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	if dc.Version, err = c.version(dc, "DescribeCluster", 1, 2); err != nil {
		return fail(addr, err)
	}
	dc.EndpointType = wire.EndpointTypeController
	resp, err := c.request(ctx, dc)
	if err != nil {
		return fail(addr, err)
	}
	cluster := resp.(*kmsg.DescribeClusterResponse)
	if err := answerError("DescribeCluster", addr, cluster.ErrorCode, cluster.ErrorMessage); err != nil {
		return fail(addr, err)
	}
	if cluster.ControllerID < 0 {
		return fail(addr, fmt.Errorf("controller %s knows no quorum leader yet: %w", addr, errRetry))
	}
	leader := c
	if a, found := brokerAddr(cluster, cluster.ControllerID); !found {
		return fail(addr, fmt.Errorf("controller %s names leader %d without an endpoint: %w", addr, cluster.ControllerID, errRetry))
	} else if a != addr {
		tried.note(addr, fmt.Errorf("names leader %d", cluster.ControllerID))
		lc, err := dialController(ctx, a, sec)
		if err != nil {
			return fail(a, fmt.Errorf("leader %d: %s: %w", cluster.ControllerID, withoutAddr(err, a), errRetry))
		}
		defer lc.Close()
		leader = lc
	}
	if err := f(ctx, leader, cluster.ClusterID); err != nil {
		return fail(leader.addr, err)
	}
	return true, nil
}

// describeOn asks the leader for its description of the quorum.
func describeOn(ctx context.Context, leader *controllerConn) (q quorumInfo, err error) {
	req, err := describeQuorumRequest(leader)
	if err != nil {
		return q, err
	}
	resp, err := leader.request(ctx, req)
	if err != nil {
		return q, fmt.Errorf("%w: %w", err, errRetry)
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	if err := answerError("DescribeQuorum", leader.addr, dq.ErrorCode, dq.ErrorMessage); err != nil {
		return q, err
	}
	for _, t := range dq.Topics {
		for _, p := range t.Partitions {
			if t.Topic != wire.MetadataTopic || p.Partition != wire.MetadataPartition {
				continue
			}
			if err := answerError("DescribeQuorum", leader.addr, p.ErrorCode, p.ErrorMessage); err != nil {
				return q, err
			}
			q.partition, q.nodes = p, dq.Nodes
			return q, nil
		}
	}
	return q, fmt.Errorf("controller %s: DescribeQuorum answer lacks %s-%d", leader.addr, wire.MetadataTopic, wire.MetadataPartition)
}

// describeQuorumRequest is a DescribeQuorum of the metadata partition at
// the newest version c speaks, up to 2.
func describeQuorumRequest(c *controllerConn) (req *kmsg.DescribeQuorumRequest, err error) {
	req = kmsg.NewPtrDescribeQuorumRequest()
	if req.Version, err = c.version(req, "DescribeQuorum", 0, 2); err != nil {
		return nil, err
	}
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = wire.MetadataTopic
	part := kmsg.NewDescribeQuorumRequestTopicPartition()
	part.Partition = wire.MetadataPartition
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	return req, nil
}

// brokerAddr returns the host:port DescribeCluster gives for node id.
func brokerAddr(r *kmsg.DescribeClusterResponse, id int32) (string, bool) {
	for _, b := range r.Brokers {
		if b.NodeID == id {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
		}
	}
	return "", false
}

// answerError turns an error code of an answer into an error that wraps
// the code's error (kerr); retriable codes (a leader that moved) wrap
// errRetry too. The answer's message follows unless it only repeats the
// code's default text, as Kafka's answers without a message of their own
// do.
func answerError(api, addr string, code int16, msg *string) error {
	err := wire.ErrorForCode(code)
	if err == nil {
		return nil
	}
	detail := ""
	if msg != nil && *msg != "" && !strings.HasSuffix(err.Error(), *msg) {
		detail = " (" + *msg + ")"
	}
	if wire.Retriable(code) {
		return fmt.Errorf("controller %s: %s: %w%s: %w", addr, api, err, detail, errRetry)
	}
	return fmt.Errorf("controller %s: %s: %w%s", addr, api, err, detail)
}

// printQuorumStatus prints describe --status: eight lines whose values
// start in column 25.
func printQuorumStatus(w io.Writer, q quorumInfo) error {
	p := q.partition
	leader, ok := findReplica(p.CurrentVoters, p.LeaderID)
	if !ok {
		return fmt.Errorf("the leader %d is not among the voters of its own answer", p.LeaderID)
	}
	laggiest := p.CurrentVoters[0]
	for _, v := range p.CurrentVoters[1:] {
		if v.LogEndOffset < laggiest.LogEndOffset {
			laggiest = v
		}
	}
	lagTime := int64(-1)
	switch {
	case laggiest.ReplicaID == leader.ReplicaID:
		lagTime = 0
	case leader.LastCaughtUpTimestamp >= 0 && laggiest.LastCaughtUpTimestamp >= 0:
		lagTime = leader.LastCaughtUpTimestamp - laggiest.LastCaughtUpTimestamp
	}
	var b strings.Builder
	line := func(label string, value any) { fmt.Fprintf(&b, "%-24s%v\n", label+":", value) }
	line("ClusterId", q.clusterID)
	line("LeaderId", p.LeaderID)
	line("LeaderEpoch", p.LeaderEpoch)
	line("HighWatermark", p.HighWatermark)
	line("MaxFollowerLag", leader.LogEndOffset-laggiest.LogEndOffset)
	line("MaxFollowerLagTimeMs", lagTime)
	line("CurrentVoters", replicaList(p.CurrentVoters, q.nodes))
	line("CurrentObservers", replicaList(p.Observers, q.nodes))
	_, err := io.WriteString(w, b.String())
	return err
}

// findReplica returns the replica with node id id.
func findReplica(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, id int32) (kmsg.DescribeQuorumResponseTopicPartitionReplicaState, bool) {
	for _, r := range rs {
		if r.ReplicaID == id {
			return r, true
		}
	}
	return kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}, false
}

// replicaList formats replicas as Kafka's tool does: a bracketed list
// joined with ", " of {"id": N, "directoryId": "...", "endpoints":
// ["NAME://host:port", ...]}, leaving out an unknown directory id and the
// endpoints of a node the answer gives none for.
func replicaList(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, nodes []kmsg.DescribeQuorumResponseNode) string {
	entries := make([]string, 0, len(rs))
	for _, r := range rs {
		fields := []string{fmt.Sprintf(`"id": %d`, r.ReplicaID)}
		if r.ReplicaDirectoryID != ([16]byte{}) {
			fields = append(fields, fmt.Sprintf(`"directoryId": "%s"`, kraft.UUID(r.ReplicaDirectoryID)))
		}
		var eps []string
		for _, n := range nodes {
			if n.NodeID != r.ReplicaID {
				continue
			}
			for _, l := range n.Listeners {
				eps = append(eps, fmt.Sprintf(`"%s://%s"`, l.Name, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))))
			}
		}
		if len(eps) > 0 {
			fields = append(fields, `"endpoints": [`+strings.Join(eps, ", ")+`]`)
		}
		entries = append(entries, "{"+strings.Join(fields, ", ")+"}")
	}
	return "[" + strings.Join(entries, ", ") + "]"
}

// printReplication prints describe --replication: a header and one row
// per replica (the leader, the other voters, the observers), every cell
// left-aligned, padded to its column's width and followed by a tab.
func printReplication(w io.Writer, q quorumInfo, humanReadable bool, now time.Time) error {
	p := q.partition
	leader, ok := findReplica(p.CurrentVoters, p.LeaderID)
	if !ok {
		return fmt.Errorf("the leader %d is not among the voters of its own answer", p.LeaderID)
	}
	rows := [][]string{{"NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}}
	add := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) error {
		fetch, err := timestampCell(r.LastFetchTimestamp, "last fetch", humanReadable, now)
		if err != nil {
			return err
		}
		caughtUp, err := timestampCell(r.LastCaughtUpTimestamp, "last caught up", humanReadable, now)
		if err != nil {
			return err
		}
		rows = append(rows, []string{
			strconv.Itoa(int(r.ReplicaID)), kraft.UUID(r.ReplicaDirectoryID).String(),
			strconv.FormatInt(r.LogEndOffset, 10), strconv.FormatInt(leader.LogEndOffset-r.LogEndOffset, 10),
			fetch, caughtUp, status,
		})
		return nil
	}
	if err := add(leader, "Leader"); err != nil {
		return err
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID != leader.ReplicaID {
			if err := add(v, "Follower"); err != nil {
				return err
			}
		}
	}
	for _, o := range p.Observers {
		if err := add(o, "Observer"); err != nil {
			return err
		}
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], len(cell))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r {
			fmt.Fprintf(&b, "%-*s\t", widths[i], cell)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// timestampCell formats a timestamp of the replication table: epoch
// milliseconds, or with humanReadable "N ms ago"; -1 (unknown) stays -1.
// A timestamp after now cannot be put as a time ago: the clocks of this
// host and the leader differ, and it is an error, as in Kafka's tool.
func timestampCell(ms int64, what string, humanReadable bool, now time.Time) (string, error) {
	if ms < 0 || !humanReadable {
		return strconv.FormatInt(ms, 10), nil
	}
	nowMs := now.UnixMilli()
	if ms == 0 || ms > nowMs {
		return "", fmt.Errorf("cannot compute a relative time, the clocks may drift: now is %d, the %s timestamp is %d", nowMs, what, ms)
	}
	return strconv.FormatInt(nowMs-ms, 10) + " ms ago", nil
}
