package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// krabkaSystem is a quorum of krabka server-start processes with a static
// voter set. With metrics set (the system "krabka-metrics") every node
// also serves its admin endpoint (--admin-address: metrics recorded and
// exposed) and the harness scrapes each node's /metrics every
// scrapeEvery, so that the two systems, run side by side, measure what
// metrics cost.
type krabkaSystem struct {
	bin       string
	dir       string
	n         int
	detectMS  int
	ports     []int
	procs     []*proc
	records   [][]byte // records[k] is client k's encoded ConfigRecord
	pprofBase int      // first KRABKA_PPROF port, 0 for none
	env       []string // added to every node's environment

	metrics     bool
	scrapeEvery time.Duration
	adminPorts  []int
	scrape      *scraper

	// tls: the controller listener is SASL_SSL with SCRAM-SHA-512 (the
	// system "krabka-tls"); secure holds its certificates and settings.
	tls    bool
	secure *secureSetup
}

// Names of the two Krabka systems.
const (
	krabkaName        = "krabka"
	krabkaMetricsName = "krabka-metrics"
	krabkaTLSName     = "krabka-tls"
)

func (s *krabkaSystem) name() string {
	switch {
	case s.metrics:
		return krabkaMetricsName
	case s.tls:
		return krabkaTLSName
	}
	return krabkaName
}

func (s *krabkaSystem) nodes() []*proc { return s.procs }

func (s *krabkaSystem) setup() error {
	admin := 0
	if s.metrics {
		admin = s.n
	}
	ports, err := freePorts(s.n + admin)
	if err != nil {
		return err
	}
	s.ports, s.adminPorts = ports[:s.n], ports[s.n:]
	var urls []string
	var voters []string
	for i, p := range s.ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	out, err := exec.Command(s.bin, "storage", "random-uuid").Output()
	if err != nil {
		return fmt.Errorf("krabka storage random-uuid: %w", err)
	}
	clusterID := strings.TrimSpace(string(out))
	var extra, formatArgs []string
	if s.tls {
		if s.secure, err = newSecureSetup(s.dir); err != nil {
			return err
		}
		extra, formatArgs = s.secure.properties(), s.secure.formatArgs()
	}
	for i, p := range s.ports {
		id := strconv.Itoa(i + 1)
		nodeDir := filepath.Join(s.dir, "node-"+id)
		props := filepath.Join(s.dir, "node-"+id+".properties")
		text := strings.Join([]string{
			"process.roles=controller",
			"node.id=" + id,
			"controller.listener.names=CONTROLLER",
			fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", p),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"metadata.log.dir=" + nodeDir,
			"controller.quorum.fetch.timeout.ms=" + strconv.Itoa(s.detectMS),
			"controller.quorum.election.timeout.ms=" + strconv.Itoa(s.detectMS),
		}, "\n") + "\n" + strings.Join(extra, "\n") + "\n"
		if err := os.WriteFile(props, []byte(text), 0o644); err != nil {
			return err
		}
		if out, err := exec.Command(s.bin, append([]string{"storage", "format", "-t", clusterID, "-c", props}, formatArgs...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("krabka storage format node %s: %w: %s", id, err, out)
		}
		env := append([]string(nil), s.env...)
		if s.pprofBase != 0 {
			env = append(env, fmt.Sprintf("KRABKA_PPROF=127.0.0.1:%d", s.pprofBase+i))
		}
		args := []string{s.bin, "server-start"}
		if s.metrics {
			admin := fmt.Sprintf("127.0.0.1:%d", s.adminPorts[i])
			args = append(args, "--admin-address", admin)
			urls = append(urls, "http://"+admin+"/metrics")
		}
		s.procs = append(s.procs, newProc(s.name()+"-"+id, s.dir, filepath.Join(s.dir, "node-"+id+".log"), env,
			append(args, props)...))
	}
	if s.metrics {
		s.scrape = newScraper(urls, s.scrapeEvery)
	}
	return nil
}

// afterStart begins the scrapes of a metrics system: every node must
// answer its first with Kafka's raft metrics.
func (s *krabkaSystem) afterStart(ctx context.Context) error {
	if s.scrape == nil {
		return nil
	}
	return s.scrape.start(ctx)
}

// close ends the scrapes and logs what they did.
func (s *krabkaSystem) close() {
	if s.scrape == nil {
		return
	}
	st := s.scrape.stop()
	if st.ok+st.failed == 0 {
		return
	}
	avg := int64(0)
	if st.ok > 0 {
		avg = st.bytes / int64(st.ok)
	}
	logf("%s: %d scrapes of /metrics every %v (%d bytes each on average), %d failed (last: %v)",
		s.name(), st.ok, s.scrapeEvery, avg, st.failed, st.lastErr)
}

func (s *krabkaSystem) dataBytes() int64 { return dirSize(s.dir) }

func (s *krabkaSystem) addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", s.ports[i]) }

// record returns client k's record: a ConfigRecord of a cluster-wide
// broker default whose value is benchValue.
func (s *krabkaSystem) record(k int) []byte {
	for len(s.records) <= k {
		v := string(benchValue)
		r := &metadata.ConfigRecord{ResourceType: 4, Name: "bench.client." + strconv.Itoa(len(s.records)), Value: &v}
		b, err := metadata.Encode(r)
		if err != nil {
			panic(err)
		}
		s.records = append(s.records, b)
	}
	return s.records[k]
}

// submit sends one SubmitChange with client k's record on c.
func (s *krabkaSystem) submit(ctx context.Context, c *kconn, k int) (*wire.SubmitChangeResponse, error) {
	req := wire.NewSubmitChangeRequest()
	req.Records = [][]byte{s.record(k)}
	resp, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*wire.SubmitChangeResponse), nil
}

func (s *krabkaSystem) leader(ctx context.Context) (int, error) {
	var errs []error
	for i := range s.n {
		if s.procs[i].pid() == 0 {
			continue
		}
		c, err := s.dialNode(ctx, s.addr(i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := s.submit(cctx, c, 0)
		cancel()
		c.close()
		switch {
		case err != nil:
			errs = append(errs, err)
		case resp.ErrorCode == 0:
			return i, nil
		case resp.LeaderID > 0 && int(resp.LeaderID) <= s.n:
			return int(resp.LeaderID) - 1, nil
		default:
			errs = append(errs, wire.ErrorForCode(resp.ErrorCode))
		}
	}
	return -1, errors.Join(append(errs, errors.New("no leader known"))...)
}

func (s *krabkaSystem) knowsLeader(ctx context.Context, i int) bool {
	c, err := s.dialNode(ctx, s.addr(i))
	if err != nil {
		return false
	}
	defer c.close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := s.submit(cctx, c, 0)
	return err == nil && (resp.ErrorCode == 0 || resp.LeaderID > 0)
}

// krabkaWriter writes over a pool of connections to one node.
type krabkaWriter struct {
	s *krabkaSystem
	*pool[*kconn]
}

func (s *krabkaSystem) dial(ctx context.Context, i, conns int) (writer, error) {
	p, err := dialPool(conns, func() (*kconn, error) { return s.dialNode(ctx, s.addr(i)) }, (*kconn).close)
	if err != nil {
		return nil, err
	}
	return &krabkaWriter{s: s, pool: p}, nil
}

func (w *krabkaWriter) write(ctx context.Context, k int) error {
	resp, err := w.s.submit(ctx, w.pick(), k)
	if err != nil {
		return err
	}
	return wire.ErrorForCode(resp.ErrorCode)
}

// krabkaProbe is the failover writer: one lazily dialled connection per
// node, sent to the node believed to lead, which moves with every
// NOT_LEADER_OR_FOLLOWER hint and, after any other failure, to the next
// node.
type krabkaProbe struct {
	s      *krabkaSystem
	idx    []int
	mu     sync.Mutex
	conns  map[int]*kconn
	target int
}

// dialAny connects to the nodes idx, starting with idx[0]. A Krabka
// follower does not forward a client's SubmitChange (it answers with the
// leader's id), so the probe, like a Kafka client with its bootstrap list,
// knows every node's address and follows the hints to whichever leads.
func (s *krabkaSystem) dialAny(ctx context.Context, idx []int) (writer, error) {
	all := make([]int, s.n)
	for i := range all {
		all[i] = i
	}
	p := &krabkaProbe{s: s, idx: all, conns: map[int]*kconn{}, target: idx[0]}
	for _, i := range idx {
		c, err := s.dialNode(ctx, s.addr(i))
		if err != nil {
			p.close()
			return nil, err
		}
		p.conns[i] = c
	}
	return p, nil
}

func (p *krabkaProbe) conn(ctx context.Context) (int, *kconn, error) {
	p.mu.Lock()
	i := p.target
	c := p.conns[i]
	p.mu.Unlock()
	if c != nil && !c.broken() {
		return i, c, nil
	}
	c, err := p.s.dialNode(ctx, p.s.addr(i))
	if err != nil {
		p.moveOn(i, -1)
		return i, nil, err
	}
	p.mu.Lock()
	if old := p.conns[i]; old != nil {
		old.close()
	}
	p.conns[i] = c
	p.mu.Unlock()
	return i, c, nil
}

// moveOn points the probe at hint (a node index) or, for -1, at the node
// after from. A hint naming from itself comes from a leader that resigned
// (it still names itself until it learns its successor): the probe moves
// on then too.
func (p *krabkaProbe) moveOn(from, hint int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.target != from {
		return
	}
	for _, i := range p.idx {
		if i == hint && hint != from {
			p.target = hint
			return
		}
	}
	for j, i := range p.idx {
		if i == from {
			p.target = p.idx[(j+1)%len(p.idx)]
			return
		}
	}
}

func (p *krabkaProbe) write(ctx context.Context, k int) error {
	i, c, err := p.conn(ctx)
	if err != nil {
		return err
	}
	resp, err := p.s.submit(ctx, c, k)
	if err != nil {
		p.moveOn(i, -1)
		return err
	}
	if resp.ErrorCode == kerr.NotLeaderForPartition.Code && resp.LeaderID > 0 {
		p.moveOn(i, int(resp.LeaderID)-1)
	} else if resp.ErrorCode != 0 {
		p.moveOn(i, -1)
	}
	return wire.ErrorForCode(resp.ErrorCode)
}

func (p *krabkaProbe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.close()
	}
}

// kconn is a pipelined Kafka-protocol connection: any number of
// goroutines send requests, and the answers, which a Kafka server writes in
// request order, are matched in that order (and checked by correlation
// id).
type kconn struct {
	c       net.Conn
	mu      sync.Mutex // serialises writes and the order of pending
	corr    int32
	buf     []byte
	pending chan *kcall
	done    chan struct{}
	errOnce sync.Once
	err     error
}

type kcall struct {
	corr int32
	req  kmsg.Request
	out  chan kresult
}

type kresult struct {
	resp kmsg.Response
	err  error
}

var benchClientID = "krabkabench"

// dialNode connects to the node at addr, over TLS and SCRAM for a
// krabka-tls system.
func (s *krabkaSystem) dialNode(ctx context.Context, addr string) (*kconn, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if s.secure != nil {
		if nc, err = s.secure.upgrade(dctx, nc, addr); err != nil {
			return nil, err
		}
	}
	c := &kconn{c: nc, pending: make(chan *kcall, 4096), done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

func (c *kconn) fail(err error) {
	c.errOnce.Do(func() {
		c.err = err
		close(c.done)
		_ = c.c.Close()
	})
}

func (c *kconn) broken() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *kconn) close() { c.fail(errors.New("connection closed")) }

func (c *kconn) readLoop() {
	var err error
	defer func() {
		c.fail(err)
		// Fail what is still waiting: nothing more is read.
		for {
			select {
			case call := <-c.pending:
				call.out <- kresult{err: c.err}
			default:
				return
			}
		}
	}()
	for {
		var frame []byte
		frame, err = wire.ReadFrame(c.c, nil, wire.DefaultMaxFrameSize)
		if err != nil {
			return
		}
		var call *kcall
		select {
		case call = <-c.pending:
		case <-c.done:
			err = c.err
			return
		}
		corr, cerr := wire.ResponseCorrelationID(frame)
		if cerr != nil || corr != call.corr {
			err = fmt.Errorf("answer %d to request %d: %v", corr, call.corr, cerr)
			call.out <- kresult{err: err}
			return
		}
		resp, derr := wire.DecodeResponse(frame, call.req)
		call.out <- kresult{resp: resp, err: derr}
	}
}

// do sends req and waits for its answer or ctx.
func (c *kconn) do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	call := &kcall{req: req, out: make(chan kresult, 1)}
	c.mu.Lock()
	if c.broken() {
		c.mu.Unlock()
		return nil, c.err
	}
	c.corr++
	call.corr = c.corr
	frame, err := wire.AppendRequest(c.buf[:0], call.corr, &benchClientID, req)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.buf = frame
	c.pending <- call
	_, err = c.c.Write(frame)
	c.mu.Unlock()
	if err != nil {
		c.fail(err)
	}
	select {
	case r := <-call.out:
		return r.resp, r.err
	case <-c.done:
		select {
		case r := <-call.out:
			return r.resp, r.err
		default:
			return nil, c.err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
