package faults

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"github.com/krabka-go/krabka/internal/bugzoo"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

var (
	flagSeed     = flag.Uint64("faults.seed", 0, "seed of the fault schedule and the clients (0: a random one, printed)")
	flagDuration = flag.Duration("faults.duration", 3*time.Minute, "length of the fault campaign")
	flagNodes    = flag.Int("faults.nodes", 5, "controllers in the campaign's quorum")
	flagInterval = flag.Duration("faults.interval", 5*time.Second, "time between the starts of two faults")
	flagBackend  = flag.String("faults.backend", "", "host back end: docker, netns, or empty to pick one")
	flagTags     = flag.String("faults.tags", "", "build tags of the krabka binary under test (e.g. writeback)")
	flagBugzoo   = flag.String("faults.bugzoo", "", "bug-zoo entry re-injected into every program built (e.g. z22; package bugzoo)")
)

// binDir holds the programs built by this test process, one per package
// and tag set.
var binDir struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		binDir.Lock()
		defer binDir.Unlock()
		if binDir.dir != "" {
			_ = os.RemoveAll(binDir.dir)
		}
	}))
}

// repoRoot is the module root, two levels up from this package.
func repoRoot() string { return filepath.Join("..", "..") }

// buildBinary builds a static cmd/krabka with the build tags tags (once
// per tag set and test process; the go build cache makes rebuilds cheap).
// It is never race-built: the processes run for minutes on a small
// machine, and their own packages run their tests under -race.
func buildBinary(t *testing.T, tags string) string {
	return buildProgram(t, tags, "./cmd/krabka")
}

// buildEmbedHost builds test/faults/internal/embedhost, a program that
// embeds the controller, statically and with the same tags as the krabka
// binary, so that a zoo tag reaches its forwarding too.
func buildEmbedHost(t *testing.T, tags string) string {
	return buildProgram(t, tags, "./test/faults/internal/embedhost")
}

// buildProgram builds the main package pkg (a path from the module root)
// with CGO_ENABLED=0 and tags, once per package, tag set and test process.
func buildProgram(t *testing.T, tags, pkg string) string {
	t.Helper()
	binDir.Lock()
	defer binDir.Unlock()
	key := pkg + " " + tags
	if bin, ok := binDir.bins[key]; ok {
		return bin
	}
	if binDir.dir == "" {
		dir, err := os.MkdirTemp("", resourcePrefix+"bin")
		if err != nil {
			t.Fatal(err)
		}
		binDir.dir, binDir.bins = dir, map[string]string{}
	}
	bin := filepath.Join(binDir.dir, fmt.Sprintf("build-%d", len(binDir.bins)), filepath.Base(pkg))
	args := []string{"build", "-tags", tags}
	if *flagBugzoo != "" {
		id, err := bugzoo.Parse(*flagBugzoo)
		if err != nil {
			t.Fatal(err)
		}
		args = []string{"build", "-tags", strings.TrimPrefix(tags+","+bugzoo.Tag, ","), "-ldflags=" + bugzoo.LinkFlag(id)}
	}
	cmd := exec.Command("go", append(args, "-o", bin, pkg)...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s %s: %v\n%s", strings.Join(args, " "), pkg, err, out)
	}
	t.Logf("built %s (go %s) in %v", bin, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	binDir.bins[key] = bin
	return bin
}

// controllerPort is the port every node listens on, on its own address.
const controllerPort = 9093

// embedHTTPPort is the port an embedded host serves its submissions on.
const embedHTTPPort = 8080

// cluster is a quorum of n krabka processes on hosts of their own, peer
// traffic going through the proxies of net, and, when embedded is 1, an
// embedded host n+1: a program that embeds the controller as an observer
// of the quorum (test/faults/internal/embedhost), its traffic to the
// voters going through proxies too.
type cluster struct {
	t        *testing.T
	n        int
	embedded int
	bin      string
	h        hosts
	net      *network
	dir      string
	props    map[int]string
	// cmds is each host's command line: its program's name and arguments.
	cmds map[int][]string
	// sec is nil for PLAINTEXT listeners, else the SASL_SSL settings.
	sec *security
}

// newCluster builds the binary with tags (and, for embedded hosts, the
// embedding program with the same tags), creates the hosts, the proxies
// of every directed link, the nodes' properties with listeners of the
// security protocol proto (PLAINTEXT or SASL_SSL), and formats them. It
// does not start them.
func newCluster(t *testing.T, n, embedded int, tags string, seed uint64, proto string) *cluster {
	t.Helper()
	if proto != plaintext && proto != saslSSL {
		t.Fatalf("security protocol %q: want %s or %s", proto, plaintext, saslSSL)
	}
	if n < 1 || n+embedded > 9 || embedded < 0 || embedded > 1 {
		t.Fatalf("%d nodes and %d embedded hosts: want 1 to 9 hosts in all, at most one of them embedded", n, embedded)
	}
	kind := hostBackend(t)
	bins := map[string]string{"krabka": buildBinary(t, tags)}
	if embedded > 0 {
		bins["embedhost"] = buildEmbedHost(t, tags)
	}
	dir, err := os.MkdirTemp("", resourcePrefix+"run")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, n: n, embedded: embedded, bin: bins["krabka"], dir: dir, props: map[int]string{}, cmds: map[int][]string{}}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	c.h = newHosts(t, kind, n+embedded, bins, dir)
	c.net = newNetwork(seed)
	if proto == saslSSL {
		c.sec = newSecurity(t, dir, n+embedded, c.h)
		c.net.tlsRecords = true
	}
	t.Cleanup(c.net.close)
	t.Cleanup(c.saveArtifacts)

	clusterID, err := run(c.bin, "storage", "random-uuid")
	if err != nil {
		t.Fatal(err)
	}
	// A voter names its peers by their proxies, and itself by the proxy
	// of the embedded host's link to it: the endpoint a voter gives for a
	// leader (NodeEndpoints) is the leader's entry in its own voter list,
	// so the embedded host, an observer outside the static voter set
	// that finds the leader through its bootstrap servers (the same
	// proxies), reaches the leader through a proxy the nemesis controls.
	// Hence at most one embedded host: a voter names itself once.
	self := map[int]string{}
	for j := 1; j <= n; j++ {
		self[j] = c.addr(j)
		if embedded > 0 {
			p, err := c.net.listen(n+1, j, net.JoinHostPort(c.h.gateway().String(), "0"), c.addr(j))
			if err != nil {
				t.Fatal(err)
			}
			self[j] = p.addr()
		}
	}
	for i := 1; i <= n+embedded; i++ {
		var peers []string
		for j := 1; j <= n; j++ {
			switch {
			case i > n:
				peers = append(peers, self[j])
			case j == i:
				peers = append(peers, fmt.Sprintf("%d@%s", j, self[j]))
			default:
				p, err := c.net.listen(i, j, net.JoinHostPort(c.h.gateway().String(), "0"), c.addr(j))
				if err != nil {
					t.Fatal(err)
				}
				peers = append(peers, fmt.Sprintf("%d@%s", j, p.addr()))
			}
		}
		quorum, format := "controller.quorum.voters=", []string{"storage", "format", "-t", clusterID}
		c.cmds[i] = []string{"krabka", "server-start"}
		if i > n {
			quorum, format = "controller.quorum.bootstrap.servers=", append(format, "--no-initial-controllers")
			c.cmds[i] = []string{"embedhost"}
		}
		c.props[i] = filepath.Join(dir, fmt.Sprintf("node-%d.properties", i))
		lines := []string{
			"process.roles=controller",
			"node.id=" + strconv.Itoa(i),
			"controller.listener.names=CONTROLLER",
			"listeners=CONTROLLER://" + c.addr(i),
			quorum + strings.Join(peers, ","),
			"metadata.log.dir=" + filepath.Join(dir, fmt.Sprintf("node-%d", i)),
		}
		if c.sec != nil {
			lines = append(lines, c.sec.serverProps(i)...)
			if i <= n {
				format = append(format, c.sec.formatArgs()...)
			}
		}
		props := strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(c.props[i], []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := run(c.bin, append(format, "-c", c.props[i])...); err != nil {
			t.Fatal(err)
		}
		c.cmds[i] = append(c.cmds[i], c.props[i])
		if i > n {
			c.cmds[i] = append(c.cmds[i], c.httpAddr(i))
		}
	}
	return c
}

// addr is node id's own controller address (clients use it directly).
func (c *cluster) addr(id int) string {
	return net.JoinHostPort(c.h.nodeAddr(id).String(), strconv.Itoa(controllerPort))
}

// httpAddr is where embedded host id serves its submissions.
func (c *cluster) httpAddr(id int) string {
	return net.JoinHostPort(c.h.nodeAddr(id).String(), strconv.Itoa(embedHTTPPort))
}

// bootstrap is every node's address, comma-separated.
func (c *cluster) bootstrap() string {
	var addrs []string
	for id := 1; id <= c.n; id++ {
		addrs = append(addrs, c.addr(id))
	}
	return strings.Join(addrs, ",")
}

func (c *cluster) start(id int) {
	c.t.Helper()
	if err := c.h.start(id, c.cmds[id]); err != nil {
		c.t.Fatalf("start host %d: %v", id, err)
	}
}

// startAll starts every node and embedded host.
func (c *cluster) startAll() {
	for id := 1; id <= c.n+c.embedded; id++ {
		c.start(id)
	}
}

// eachNode runs do for every node at once and fails the test on an error.
func (c *cluster) eachNode(do func(id int) error) {
	c.t.Helper()
	errs := make(chan error, c.n)
	for id := 1; id <= c.n; id++ {
		go func() {
			if err := do(id); err != nil {
				errs <- fmt.Errorf("node %d: %w", id, err)
				return
			}
			errs <- nil
		}()
	}
	for range c.n {
		if err := <-errs; err != nil {
			c.t.Fatal(err)
		}
	}
}

// saveArtifacts keeps, for a failed test, each node's output next to its
// data directory and says where they are.
func (c *cluster) saveArtifacts() {
	if !c.t.Failed() {
		return
	}
	for id := 1; id <= c.n+c.embedded; id++ {
		if err := c.h.saveLogs(id, filepath.Join(c.dir, fmt.Sprintf("node-%d.log", id))); err != nil {
			c.t.Logf("logs of host %d: %v", id, err)
		}
	}
	c.t.Logf("artifacts (node logs node-N.log, data directories node-N/, history.html when checked; embedded hosts are the nodes above %d) are under %s", c.n, c.dir)
}

var statusLeader = regexp.MustCompile(`(?m)^LeaderId: +(\d+)\nLeaderEpoch: +(\d+)\nHighWatermark: +(-?\d+)$`)

// describeLeader asks the quorum, with krabka metadata-quorum describe
// --status run from the test's host, for the leader and its epoch.
func (c *cluster) describeLeader() (id, epoch int, err error) {
	args := append([]string{"metadata-quorum", "--bootstrap-controller", c.bootstrap(), "--timeout", "3s"}, c.toolArgs()...)
	out, err := run(c.bin, append(args, "describe", "--status")...)
	if err != nil {
		return 0, 0, err
	}
	m := statusLeader.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("describe --status printed:\n%s", out)
	}
	id, _ = strconv.Atoi(m[1])
	epoch, _ = strconv.Atoi(m[2])
	return id, epoch, nil
}

// leader waits for a leader the quorum agrees on.
func (c *cluster) leader() int {
	c.t.Helper()
	var id int
	var last error
	waitFor(c.t, 90*time.Second, "leader", func() bool {
		id, _, last = c.describeLeader()
		return last == nil && id > 0
	}, func() string { return fmt.Sprint(last) })
	return id
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v: %s", what, timeout, detail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// errMessage is a response's error code and message as an error.
func errMessage(code int16, msg *string) error {
	err := wire.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// submit sends records to node id once. ok is the acknowledged (offset,
// epoch); err says why not.
func (c *cluster) submit(ctx context.Context, id int, records ...[]byte) (*wire.SubmitChangeResponse, error) {
	req := wire.NewSubmitChangeRequest()
	req.Records = records
	resp, err := c.call(ctx, c.addr(id), req)
	if err != nil {
		return nil, err
	}
	r := resp.(*wire.SubmitChangeResponse)
	return r, errMessage(r.ErrorCode, r.ErrorMessage)
}

// mustSubmit submits records until a node acknowledges them, following
// leader hints. It is for setup, before any fault.
func (c *cluster) mustSubmit(records ...[]byte) *wire.SubmitChangeResponse {
	c.t.Helper()
	id := 1
	var resp *wire.SubmitChangeResponse
	var last error
	waitFor(c.t, 60*time.Second, "acknowledged submit", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, last = c.submit(ctx, id, records...)
		if last == nil {
			return true
		}
		if resp != nil && resp.ErrorCode == kerr.NotLeaderForPartition.Code && resp.LeaderID > 0 {
			id = int(resp.LeaderID)
		} else {
			id = id%c.n + 1
		}
		return false
	}, func() string { return fmt.Sprint(last) })
	return resp
}

// topicID derives a topic's id from its name.
func topicID(name string) [16]byte {
	h := fnv.New128a()
	h.Write([]byte(name))
	var id [16]byte
	copy(id[:], h.Sum(nil))
	return id
}

func mustEncode(t *testing.T, r metadata.Record) []byte {
	t.Helper()
	b, err := metadata.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func topicRecord(t *testing.T, name string) []byte {
	r := metadata.NewTopicRecord()
	r.Name, r.TopicId = name, topicID(name)
	return mustEncode(t, r)
}

// configRecord sets config key of topic to value.
func configRecord(t *testing.T, topic, key, value string) []byte {
	r := metadata.NewConfigRecord()
	r.ResourceType, r.ResourceName, r.Name, r.Value = 2, topic, key, &value
	return mustEncode(t, r)
}

// committedBatch is one batch of a node's committed log, as stored.
type committedBatch struct {
	base, next int64
	raw        []byte
}

// committedLog reads node id's log from offset 0 to its high watermark
// over MetadataFetch (1004).
func (c *cluster) committedLog(ctx context.Context, id int) (batches []committedBatch, hwm int64, err error) {
	var offset int64
	for {
		req := wire.NewMetadataFetchRequest()
		req.FetchOffset, req.MaxBytes = offset, 1<<20
		resp, err := c.call(ctx, c.addr(id), req)
		if err != nil {
			return nil, 0, err
		}
		r := resp.(*wire.MetadataFetchResponse)
		if err := wire.ErrorForCode(r.ErrorCode); err != nil {
			return nil, 0, err
		}
		if r.SnapshotID.EndOffset >= 0 {
			return nil, 0, fmt.Errorf("node %d starts its log at a snapshot %+v; the comparison reads logs from offset 0", id, r.SnapshotID)
		}
		if len(r.Records) == 0 {
			if offset != r.HighWatermark && r.HighWatermark >= 0 {
				return nil, 0, fmt.Errorf("node %d returned nothing at offset %d below its high watermark %d", id, offset, r.HighWatermark)
			}
			return batches, offset, nil
		}
		it := recordbatch.NewIterator(nil, r.Records)
		for it.Next() {
			b := it.Batch()
			raw := r.Records[it.Pos():it.Offset()]
			batches = append(batches, committedBatch{base: b.BaseOffset, next: b.NextOffset(), raw: append([]byte(nil), raw...)})
			offset = b.NextOffset()
		}
		if err := it.Err(); err != nil {
			return nil, 0, err
		}
	}
}
