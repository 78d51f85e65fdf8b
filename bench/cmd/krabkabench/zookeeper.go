package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkSystem is a ZooKeeper ensemble of n JVMs running QuorumPeerMain from
// the Debian package's jars, with forceSync=yes.
type zkSystem struct {
	java      string
	classpath string
	dir       string
	n         int
	detectMS  int // tickTime × syncLimit
	client    []int
	procs     []*proc
	keys      int // znodes /bench/k0.. created by afterStart
}

func (s *zkSystem) name() string   { return "zookeeper" }
func (s *zkSystem) nodes() []*proc { return s.procs }

// zkTickMS is tickTime; syncLimit is detectMS / zkTickMS.
const zkTickMS = 500

func (s *zkSystem) setup() error {
	ports, err := freePorts(3 * s.n)
	if err != nil {
		return err
	}
	s.client = ports[:s.n]
	var servers []string
	for i := range s.n {
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, ports[s.n+i], ports[2*s.n+i]))
	}
	for i := range s.n {
		id := strconv.Itoa(i + 1)
		dataDir := filepath.Join(s.dir, "node-"+id)
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(id+"\n"), 0o644); err != nil {
			return err
		}
		cfg := filepath.Join(s.dir, "node-"+id+".cfg")
		text := strings.Join(append([]string{
			"tickTime=" + strconv.Itoa(zkTickMS),
			"initLimit=20",
			"syncLimit=" + strconv.Itoa(max(1, s.detectMS/zkTickMS)),
			"dataDir=" + dataDir,
			"clientPort=" + strconv.Itoa(s.client[i]),
			"clientPortAddress=127.0.0.1",
			"forceSync=yes",
			"maxClientCnxns=0",
			"admin.enableServer=false",
			"4lw.commands.whitelist=srvr,stat,ruok,mntr",
			"autopurge.purgeInterval=0",
		}, servers...), "\n") + "\n"
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			return err
		}
		// The heap of zkServer.sh's default (ZK_SERVER_HEAP=1000).
		s.procs = append(s.procs, newProc("zookeeper-"+id, s.dir, filepath.Join(s.dir, "node-"+id+".log"), nil,
			s.java, "-Xmx1000m", "-Dzookeeper.forceSync=yes", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", s.classpath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg))
	}
	return nil
}

func (s *zkSystem) addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", s.client[i]) }

func (s *zkSystem) dataBytes() int64 { return dirSize(s.dir) }

// connect opens a session with the servers idx and waits until it is
// established.
func (s *zkSystem) connect(ctx context.Context, idx []int) (*zk.Conn, error) {
	var addrs []string
	for _, i := range idx {
		addrs = append(addrs, s.addr(i))
	}
	c, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		return nil, err
	}
	go func() {
		for range events {
		}
	}()
	for c.State() != zk.StateHasSession {
		if ctx.Err() != nil {
			c.Close()
			return nil, ctx.Err()
		}
		sleepCtx(ctx, 5*time.Millisecond)
	}
	return c, nil
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// afterStart creates /bench and one znode per client for setData.
func (s *zkSystem) afterStart(ctx context.Context) error {
	l, err := s.leader(ctx)
	if err != nil {
		return err
	}
	c, err := s.connect(ctx, []int{l})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Create("/bench", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, s.keys)
	for k := range s.keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Create(zkPath(k), benchValue, 0, zk.WorldACL(zk.PermAll))
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				errs[k] = err
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func zkPath(k int) string { return "/bench/k" + strconv.Itoa(k) }

// mode asks node i for its role with the srvr four-letter word. (The
// client library's parser of srvr rejects the Debian build's version
// string, so the Mode line is read here.)
func (s *zkSystem) mode(i int) zk.Mode {
	c, err := net.DialTimeout("tcp", s.addr(i), time.Second)
	if err != nil {
		return zk.ModeUnknown
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return zk.ModeUnknown
	}
	b, _ := io.ReadAll(c)
	for _, line := range strings.Split(string(b), "\n") {
		switch strings.TrimSpace(strings.TrimPrefix(line, "Mode:")) {
		case "leader":
			return zk.ModeLeader
		case "follower":
			return zk.ModeFollower
		}
	}
	return zk.ModeUnknown
}

func (s *zkSystem) leader(context.Context) (int, error) {
	for i := range s.n {
		if s.procs[i].pid() != 0 && s.mode(i) == zk.ModeLeader {
			return i, nil
		}
	}
	return -1, errors.New("no leader known")
}

func (s *zkSystem) knowsLeader(_ context.Context, i int) bool {
	m := s.mode(i)
	return m == zk.ModeLeader || m == zk.ModeFollower
}

// zkWriter calls setData over a pool of sessions.
type zkWriter struct{ *pool[*zk.Conn] }

func (s *zkSystem) dial(ctx context.Context, i, conns int) (writer, error) {
	return s.dialSessions(ctx, []int{i}, conns)
}

func (s *zkSystem) dialAny(ctx context.Context, idx []int) (writer, error) {
	return s.dialSessions(ctx, idx, 1)
}

func (s *zkSystem) dialSessions(ctx context.Context, idx []int, conns int) (writer, error) {
	p, err := dialPool(conns, func() (*zk.Conn, error) { return s.connect(ctx, idx) }, (*zk.Conn).Close)
	if err != nil {
		return nil, err
	}
	return zkWriter{p}, nil
}

// write calls setData; zk.Conn takes no context, so a call that ctx
// abandons finishes in the background.
func (w zkWriter) write(ctx context.Context, k int) error {
	c := w.pick()
	done := make(chan error, 1)
	go func() {
		_, err := c.Set(zkPath(k), benchValue, -1)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
