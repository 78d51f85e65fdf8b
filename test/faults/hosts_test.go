package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hosts runs one process per node, each on a host with its own address:
// krabka, or a program that embeds the controller. Node ids count from 1.
type hosts interface {
	// name says which back end this is, for the test log.
	name() string
	// nodeAddr is the address node id listens on.
	nodeAddr(id int) netip.Addr
	// gateway is the address of the test process on the nodes' network:
	// proxies listen there.
	gateway() netip.Addr
	// start starts node id, or restarts it after a kill, with cmd: the
	// name of a program the back end was given and its arguments (paths
	// the host and the node share).
	start(id int, cmd []string) error
	// kill sends SIGKILL and waits for the process to be gone.
	kill(id int) error
	// stop sends SIGTERM and waits for the exit.
	stop(id int) error
	// pause freezes the process (SIGSTOP); resume thaws it.
	pause(id int) error
	resume(id int) error
	// saveLogs writes node id's stdout and stderr to path.
	saveLogs(id int, path string) error
	// close removes everything the back end created.
	close()
}

// resourcePrefix starts the name of every container, network, image,
// namespace and link the suite creates; the suffix is the process id so a
// sweep can tell leftovers of dead runs from a running one.
const resourcePrefix = "kf"

// run runs a command and returns its trimmed stdout, or an error with its
// stderr.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// dockerUsable reports whether the Docker engine answers.
func dockerUsable() error {
	if _, err := exec.LookPath("docker"); err != nil {
		return err
	}
	_, err := run("docker", "info", "--format", "{{.ServerVersion}}")
	return err
}

// netnsUsable reports whether this process can create network namespaces.
func netnsUsable() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return err
	}
	_, err := run("ip", "netns", "list")
	return err
}

// hostBackend picks the back end: the one -faults.backend names, else
// Docker when it answers, else network namespaces.
func hostBackend(t *testing.T) string {
	t.Helper()
	derr, nerr := dockerUsable(), netnsUsable()
	switch *flagBackend {
	case "docker":
		if derr != nil {
			t.Fatalf("-faults.backend=docker: %v", derr)
		}
		return "docker"
	case "netns":
		if nerr != nil {
			t.Fatalf("-faults.backend=netns: %v", nerr)
		}
		return "netns"
	case "":
	default:
		t.Fatalf("-faults.backend=%q: want docker, netns or empty", *flagBackend)
	}
	switch {
	case derr == nil:
		return "docker"
	case nerr == nil:
		return "netns"
	}
	msg := fmt.Sprintf("no host back end: docker: %v; network namespaces: %v", derr, nerr)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// newHosts creates the back end for n nodes, which run the programs of
// bins (by name: krabka, embedhost). The nodes' data lives under dir,
// which Docker mounts at the same path in every container.
func newHosts(t *testing.T, kind string, n int, bins map[string]string, dir string) hosts {
	t.Helper()
	sweepOnce.Do(sweep)
	var h hosts
	var err error
	switch kind {
	case "docker":
		h, err = newDockerHosts(bins, dir)
	case "netns":
		h, err = newNetnsHosts(n, bins, dir)
	}
	if err != nil {
		t.Fatalf("%s hosts: %v", kind, err)
	}
	t.Cleanup(h.close)
	t.Logf("host back end: %s (gateway %s)", h.name(), h.gateway())
	return h
}

var sweepOnce sync.Once

// pidAlive reports whether a process with that id exists.
func pidAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}

// ownerPid extracts the process id from a resource name kf<pid>..., or 0.
func ownerPid(name string) int {
	rest, ok := strings.CutPrefix(name, resourcePrefix)
	if !ok {
		return 0
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	pid, _ := strconv.Atoi(rest[:end])
	return pid
}

// sweep removes what earlier runs of the suite left behind when their
// process died before its cleanup ran.
func sweep() {
	if dockerUsable() == nil {
		// Containers, networks and volumes of the suite carry
		// krabka.faults.pid; those of the compose test belong to a compose
		// project named kf<pid>-<n>.
		owner := map[string]func(string) int{
			"krabka.faults.pid":          func(v string) int { pid, _ := strconv.Atoi(v); return pid },
			"com.docker.compose.project": ownerPid,
		}
		for _, label := range []string{"krabka.faults.pid", "com.docker.compose.project"} {
			for _, kind := range [][]string{{"ps", "-a"}, {"network", "ls"}, {"volume", "ls"}} {
				args := append(append([]string(nil), kind...), "--filter", "label="+label, "--format", `{{.ID}} {{.Label "`+label+`"}}`)
				if kind[0] == "volume" {
					args[len(args)-1] = `{{.Name}} {{.Label "` + label + `"}}`
				}
				out, _ := run("docker", args...)
				for line := range strings.Lines(out) {
					f := strings.Fields(line)
					if len(f) != 2 || owner[label](f[1]) <= 0 || pidAlive(owner[label](f[1])) {
						continue
					}
					switch kind[0] {
					case "ps":
						_, _ = run("docker", "rm", "-f", "-v", f[0])
					default:
						_, _ = run("docker", kind[0], "rm", f[0])
					}
				}
			}
		}
	}
	if netnsUsable() == nil {
		out, _ := run("ip", "netns", "list")
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) > 0 && ownerPid(f[0]) > 0 && !pidAlive(ownerPid(f[0])) {
				_, _ = run("ip", "netns", "del", f[0])
			}
		}
		out, _ = run("ip", "-o", "link", "show")
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if ownerPid(name) > 0 && !pidAlive(ownerPid(name)) {
				_, _ = run("ip", "link", "del", name)
			}
		}
	}
}

// pickSubnet returns a random 10.x.y.0/24 not in use by a local interface
// (best effort: creation fails on a clash and the caller retries).
func pickSubnet() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + rand.IntN(150)), byte(rand.IntN(256)), 0}), 24)
}

// hostAddr returns the address .k of a /24 subnet.
func hostAddr(subnet netip.Prefix, k int) netip.Addr {
	a := subnet.Addr().As4()
	a[3] = byte(k)
	return netip.AddrFrom4(a)
}

// dockerHosts runs nodes as containers of a scratch image on a private
// bridge network.
type dockerHosts struct {
	tag     string // kf<pid>-<n>: image, network and container prefix
	image   string
	subnet  netip.Prefix
	dataDir string
	mu      sync.Mutex
	created map[int]bool
}

// buildImage builds the image of deploy/Dockerfile, tagged tag, in a
// generated context holding the programs of bins (krabka, whose path the
// Dockerfile copies, and any other at /<name>).
func buildImage(tag string, bins map[string]string) error {
	ctxDir, err := os.MkdirTemp("", resourcePrefix+"ctx")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "Dockerfile"))
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(bins)) {
		b, err := os.ReadFile(bins[name])
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ctxDir, name), b, 0o755); err != nil {
			return err
		}
		if name != "krabka" {
			dockerfile = fmt.Appendf(dockerfile, "COPY %s /%s\n", name, name)
		}
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), dockerfile, 0o644); err != nil {
		return err
	}
	_, err = run("docker", "build", "-q", "--label", "krabka.faults.pid="+strconv.Itoa(os.Getpid()), "-t", tag, ctxDir)
	return err
}

var runSeq struct {
	sync.Mutex
	n int
}

// uniqueTag names this run's resources: kf<pid>-<seq>.
func uniqueTag() string {
	runSeq.Lock()
	defer runSeq.Unlock()
	runSeq.n++
	return fmt.Sprintf("%s%d-%d", resourcePrefix, os.Getpid(), runSeq.n)
}

func newDockerHosts(bins map[string]string, dataDir string) (*dockerHosts, error) {
	h := &dockerHosts{tag: uniqueTag(), dataDir: dataDir, created: map[int]bool{}}
	h.image = h.tag + ":latest"
	if err := buildImage(h.image, bins); err != nil {
		return nil, err
	}
	var err error
	for range 20 {
		h.subnet = pickSubnet()
		_, err = run("docker", "network", "create", "--driver", "bridge",
			"--label", "krabka.faults.pid="+strconv.Itoa(os.Getpid()),
			"--subnet", h.subnet.String(), "--gateway", hostAddr(h.subnet, 1).String(), h.tag)
		if err == nil {
			return h, nil
		}
	}
	_, _ = run("docker", "rmi", "-f", h.image)
	return nil, err
}

func (h *dockerHosts) name() string {
	return "docker (network " + h.tag + ", " + h.subnet.String() + ")"
}

func (h *dockerHosts) nodeAddr(id int) netip.Addr { return hostAddr(h.subnet, 10+id) }

func (h *dockerHosts) gateway() netip.Addr { return hostAddr(h.subnet, 1) }

func (h *dockerHosts) container(id int) string { return fmt.Sprintf("%s-node-%d", h.tag, id) }

func (h *dockerHosts) start(id int, cmd []string) error {
	h.mu.Lock()
	created := h.created[id]
	h.created[id] = true
	h.mu.Unlock()
	if !created {
		args := append([]string{"create", "--name", h.container(id),
			"--label", "krabka.faults.pid=" + strconv.Itoa(os.Getpid()),
			"--network", h.tag, "--ip", h.nodeAddr(id).String(),
			"-v", h.dataDir + ":" + h.dataDir,
			"--entrypoint", "/" + cmd[0], h.image}, cmd[1:]...)
		if _, err := run("docker", args...); err != nil {
			return err
		}
	}
	_, err := run("docker", "start", h.container(id))
	return err
}

func (h *dockerHosts) kill(id int) error {
	_, err := run("docker", "kill", "-s", "KILL", h.container(id))
	if err != nil {
		return err
	}
	_, err = run("docker", "wait", h.container(id))
	return err
}

func (h *dockerHosts) stop(id int) error {
	_, err := run("docker", "stop", "-t", "30", h.container(id))
	return err
}

func (h *dockerHosts) pause(id int) error {
	_, err := run("docker", "pause", h.container(id))
	return err
}

func (h *dockerHosts) resume(id int) error {
	_, err := run("docker", "unpause", h.container(id))
	return err
}

func (h *dockerHosts) saveLogs(id int, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// Bounded like every other docker command (run): an engine that has
	// stopped answering must fail the save, not hang the suite.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "logs", h.container(id))
	cmd.Stdout, cmd.Stderr = f, f
	return cmd.Run()
}

func (h *dockerHosts) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.created {
		_, _ = run("docker", "rm", "-f", "-v", h.container(id))
	}
	_, _ = run("docker", "network", "rm", h.tag)
	_, _ = run("docker", "rmi", "-f", h.image)
}

// netnsHosts runs nodes as processes in network namespaces joined to a
// bridge by veth pairs; the bridge holds the gateway address.
type netnsHosts struct {
	tag    string // kf<pid>x<seq>, short: Linux link names have 15 bytes
	bins   map[string]string
	dir    string
	subnet netip.Prefix
	n      int
	mu     sync.Mutex
	procs  map[int]*netnsProc
}

type netnsProc struct {
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{}
}

func newNetnsHosts(n int, bins map[string]string, dataDir string) (*netnsHosts, error) {
	tag := strings.ReplaceAll(uniqueTag(), "-", "x")
	h := &netnsHosts{tag: tag, bins: bins, dir: dataDir, n: n, procs: map[int]*netnsProc{}}
	bridge := tag + "b"
	var err error
	for range 20 {
		h.subnet = pickSubnet()
		if _, err = run("ip", "link", "add", bridge, "type", "bridge"); err != nil {
			return nil, err
		}
		gw := netip.PrefixFrom(h.gateway(), 24).String()
		if _, err = run("ip", "addr", "add", gw, "dev", bridge); err == nil {
			break
		}
		_, _ = run("ip", "link", "del", bridge)
	}
	if err != nil {
		return nil, err
	}
	if _, err := run("ip", "link", "set", bridge, "up"); err != nil {
		h.close()
		return nil, err
	}
	for id := 1; id <= n; id++ {
		ns, veth := h.ns(id), fmt.Sprintf("%sv%d", tag, id)
		steps := [][]string{
			{"netns", "add", ns},
			{"link", "add", veth, "type", "veth", "peer", "name", veth + "p"},
			{"link", "set", veth + "p", "netns", ns},
			{"link", "set", veth, "master", bridge, "up"},
			{"-n", ns, "addr", "add", netip.PrefixFrom(h.nodeAddr(id), 24).String(), "dev", veth + "p"},
			{"-n", ns, "link", "set", veth + "p", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if _, err := run("ip", s...); err != nil {
				h.close()
				return nil, err
			}
		}
	}
	return h, nil
}

func (h *netnsHosts) ns(id int) string { return fmt.Sprintf("%sn%d", h.tag, id) }

func (h *netnsHosts) name() string {
	return "network namespaces (" + h.tag + "*, " + h.subnet.String() + ")"
}

func (h *netnsHosts) nodeAddr(id int) netip.Addr { return hostAddr(h.subnet, 10+id) }

func (h *netnsHosts) gateway() netip.Addr { return hostAddr(h.subnet, 1) }

func (h *netnsHosts) logPath(id int) string {
	return filepath.Join(h.dir, fmt.Sprintf("node-%d.out", id))
}

func (h *netnsHosts) start(id int, args []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.procs[id]; p != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("node %d is running", id)
		}
	}
	bin, ok := h.bins[args[0]]
	if !ok {
		return fmt.Errorf("node %d: no program %s", id, args[0])
	}
	out, err := os.OpenFile(h.logPath(id), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.ns(id), bin}, args[1:]...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return err
	}
	p := &netnsProc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	h.procs[id] = p
	return nil
}

// signal sends sig to node id's process (ip netns exec execs the binary,
// so the child is krabka itself).
func (h *netnsHosts) signal(id int, sig syscall.Signal) (*netnsProc, error) {
	h.mu.Lock()
	p := h.procs[id]
	h.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("node %d was never started", id)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return nil, fmt.Errorf("node %d: %v: %w", id, sig, err)
	}
	return p, nil
}

func (h *netnsHosts) waitExit(id int, p *netnsProc) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("node %d did not exit", id)
	}
}

func (h *netnsHosts) kill(id int) error {
	p, err := h.signal(id, syscall.SIGKILL)
	if err != nil {
		return err
	}
	return h.waitExit(id, p)
}

func (h *netnsHosts) stop(id int) error {
	p, err := h.signal(id, syscall.SIGTERM)
	if err != nil {
		return err
	}
	return h.waitExit(id, p)
}

func (h *netnsHosts) pause(id int) error {
	_, err := h.signal(id, syscall.SIGSTOP)
	return err
}

func (h *netnsHosts) resume(id int) error {
	_, err := h.signal(id, syscall.SIGCONT)
	return err
}

func (h *netnsHosts) saveLogs(id int, path string) error {
	h.mu.Lock()
	p := h.procs[id]
	h.mu.Unlock()
	if p == nil {
		return fmt.Errorf("node %d was never started", id)
	}
	b, err := os.ReadFile(p.out.Name())
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func (h *netnsHosts) close() {
	h.mu.Lock()
	procs := h.procs
	h.procs = map[int]*netnsProc{}
	h.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	for id := 1; id <= h.n; id++ {
		_, _ = run("ip", "netns", "del", h.ns(id))
		_, _ = run("ip", "link", "del", fmt.Sprintf("%sv%d", h.tag, id))
	}
	_, _ = run("ip", "link", "del", h.tag+"b")
}
