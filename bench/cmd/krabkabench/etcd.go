package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdSystem is an etcd cluster of n etcd processes (fsync is etcd's
// default; --unsafe-no-fsync stays off).
type etcdSystem struct {
	bin      string
	dir      string
	n        int
	detectMS int
	client   []int // client ports
	peer     []int // peer ports
	procs    []*proc
}

func (s *etcdSystem) name() string   { return "etcd" }
func (s *etcdSystem) nodes() []*proc { return s.procs }

func (s *etcdSystem) setup() error {
	ports, err := freePorts(2 * s.n)
	if err != nil {
		return err
	}
	s.client, s.peer = ports[:s.n], ports[s.n:]
	var initial []string
	for i := range s.n {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i+1, s.peer[i]))
	}
	for i := range s.n {
		id := strconv.Itoa(i + 1)
		curl := fmt.Sprintf("http://127.0.0.1:%d", s.client[i])
		purl := fmt.Sprintf("http://127.0.0.1:%d", s.peer[i])
		s.procs = append(s.procs, newProc("etcd-"+id, s.dir, filepath.Join(s.dir, "node-"+id+".log"), nil,
			s.bin,
			"--name", "e"+id,
			"--data-dir", filepath.Join(s.dir, "node-"+id),
			"--listen-client-urls", curl, "--advertise-client-urls", curl,
			"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new", "--initial-cluster-token", "krabkabench",
			"--heartbeat-interval", "100",
			"--election-timeout", strconv.Itoa(s.detectMS),
			"--log-level", "error",
		))
	}
	return nil
}

func (s *etcdSystem) afterStart(context.Context) error { return nil }

func (s *etcdSystem) dataBytes() int64 { return dirSize(s.dir) }

func (s *etcdSystem) endpoint(i int) string { return fmt.Sprintf("127.0.0.1:%d", s.client[i]) }

func (s *etcdSystem) newClient(eps []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
}

// status asks node i for its member id and the leader's.
func (s *etcdSystem) status(ctx context.Context, i int) (*clientv3.StatusResponse, error) {
	c, err := s.newClient([]string{s.endpoint(i)})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Status(cctx, s.endpoint(i))
}

func (s *etcdSystem) leader(ctx context.Context) (int, error) {
	var errs []error
	for i := range s.n {
		if s.procs[i].pid() == 0 {
			continue
		}
		st, err := s.status(ctx, i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Leader != 0 && st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return -1, errors.Join(append(errs, errors.New("no leader known"))...)
}

func (s *etcdSystem) knowsLeader(ctx context.Context, i int) bool {
	st, err := s.status(ctx, i)
	return err == nil && st.Leader != 0
}

// etcdWriter puts over a pool of clients, one gRPC connection each.
type etcdWriter struct{ *pool[*clientv3.Client] }

func (s *etcdSystem) dial(_ context.Context, i, conns int) (writer, error) {
	return s.dialEndpoints([]string{s.endpoint(i)}, conns)
}

func (s *etcdSystem) dialAny(_ context.Context, idx []int) (writer, error) {
	var eps []string
	for _, i := range idx {
		eps = append(eps, s.endpoint(i))
	}
	return s.dialEndpoints(eps, 1)
}

func (s *etcdSystem) dialEndpoints(eps []string, conns int) (writer, error) {
	p, err := dialPool(conns, func() (*clientv3.Client, error) { return s.newClient(eps) },
		func(c *clientv3.Client) { _ = c.Close() })
	if err != nil {
		return nil, err
	}
	return etcdWriter{p}, nil
}

func (w etcdWriter) write(ctx context.Context, k int) error {
	_, err := w.pick().Put(ctx, "/bench/k"+strconv.Itoa(k), string(benchValue))
	return err
}
