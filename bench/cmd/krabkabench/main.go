// Command krabkabench runs Krabka, etcd 3.7 and ZooKeeper 3.8 side by side
// on this machine and prints one table: closed-loop writes at several
// concurrencies, failover after kill -9 and after a graceful stop of the
// leader, restart-to-serving with a large log, and the machine's own
// floors (fsync and loopback round trip) measured in the same run.
//
// Every cluster runs as separate processes on 127.0.0.1 with fsync on, and
// the systems take turns workload by workload (the order rotates), so
// that the machine's load, which varies by the minute on a shared host,
// weighs on all of them alike: the ratios are the result, the absolute
// numbers only describe the run they come from.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	quick       bool
	loopsOnly   bool
	root        string
	cache       string
	dir         string
	out         string
	nodes       []int
	clients     []int
	conns       int
	duration    time.Duration
	warmup      time.Duration
	loopRounds  int
	failRounds  int
	fillWrites  int
	detectMS    int
	systems     []string
	zkClasspath string
	java        string
	keep        bool
	krabkaPprof int
	cpuProfile  string
	krabkaEnv   []string
	krabkaTags  string
	traceHops   bool
	scrapeEvery time.Duration
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "krabkabench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var prof *os.File
	if o.cpuProfile != "" {
		prof, err = os.Create(o.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(prof)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "krabkabench: -cpuprofile:", err)
			os.Exit(2)
		}
	}
	err = run(ctx, o)
	if prof != nil {
		pprof.StopCPUProfile()
		_ = prof.Close()
	}
	stop()
	killAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "krabkabench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("krabkabench", flag.ContinueOnError)
	var o options
	var nodes, clients, systems string
	fs.BoolVar(&o.quick, "quick", false, "short run (under 3 minutes): 2 s loops, 3 failover rounds, 5-node cluster for the loops only")
	fs.StringVar(&o.root, "root", "..", "the Krabka repository (the main module)")
	fs.StringVar(&o.cache, "cache", ".cache", "where the krabka and etcd binaries are built")
	fs.StringVar(&o.dir, "dir", "", "directory for the clusters' data (default: a new temporary directory, removed afterwards)")
	fs.StringVar(&o.out, "out", "", "also write the result table to this file")
	fs.StringVar(&nodes, "nodes", "3,5", "cluster sizes")
	fs.StringVar(&clients, "clients", "1,16,128", "concurrent clients of the closed loops")
	fs.IntVar(&o.conns, "conns", 8, "connections the clients share (at most one per client)")
	fs.DurationVar(&o.duration, "duration", 15*time.Second, "length of one closed-loop run")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "closed-loop warm-up per system before measuring")
	fs.IntVar(&o.loopRounds, "loop-rounds", 3, "closed-loop runs per system and concurrency (the median by throughput is reported)")
	fs.IntVar(&o.failRounds, "failover-rounds", 5, "failover rounds per system and kind (the median is reported)")
	fs.IntVar(&o.fillWrites, "fill", 100000, "writes before the restart-to-serving measurement")
	fs.IntVar(&o.detectMS, "detect-ms", 1000, "failure-detection timeout of every system, ms")
	fs.StringVar(&systems, "systems", "krabka,etcd,zookeeper", "systems to run: krabka, krabka-metrics (krabka with its admin endpoint on and scraped, for the cost of metrics), krabka-tls (krabka on SASL_SSL with SCRAM-SHA-512, for the cost of security), etcd, zookeeper")
	fs.DurationVar(&o.scrapeEvery, "scrape-interval", time.Second, "how often the harness scrapes each krabka-metrics node's /metrics")
	fs.StringVar(&o.zkClasspath, "zk-classpath", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar", "ZooKeeper's class path (Debian packages zookeeper and libslf4j-java)")
	fs.StringVar(&o.java, "java", "java", "the java command for ZooKeeper")
	fs.BoolVar(&o.keep, "keep", false, "keep the data directory")
	fs.BoolVar(&o.loopsOnly, "loops-only", false, "run only the closed loops (no failover, no restart), e.g. while profiling")
	fs.Func("krabka-env", "KEY=VALUE added to the krabka nodes' environment (repeatable), e.g. GOGC=200 to compare runtime settings", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.krabkaEnv = append(o.krabkaEnv, v)
		return nil
	})
	fs.StringVar(&o.krabkaTags, "krabka-tags", "", "build tags for the krabka binary, e.g. krabkalatency for a measuring build (internal/latency: span percentiles in the node logs, see -keep)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the harness's own CPU profile (the load generator's) to this file")
	fs.IntVar(&o.krabkaPprof, "krabka-pprof", 0, "first port of the krabka nodes' KRABKA_PPROF listeners (0: off)")
	fs.BoolVar(&o.traceHops, "trace-hops", false, "during Krabka's 1-client loop, trace every node for 2 s and break a write's time down into its hops (needs -krabka-pprof)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		defaults := map[string]func(){
			"duration":        func() { o.duration = 2 * time.Second },
			"warmup":          func() { o.warmup = time.Second },
			"loop-rounds":     func() { o.loopRounds = 1 },
			"failover-rounds": func() { o.failRounds = 3 },
			"fill":            func() { o.fillWrites = 5000 },
		}
		for name, f := range defaults {
			if !set[name] {
				f()
			}
		}
	}
	var err error
	if o.nodes, err = intList(nodes); err != nil {
		return o, fmt.Errorf("-nodes: %w", err)
	}
	if o.clients, err = intList(clients); err != nil {
		return o, fmt.Errorf("-clients: %w", err)
	}
	for _, n := range o.nodes {
		if n < 3 || n%2 == 0 {
			return o, fmt.Errorf("-nodes %d: want an odd size of at least 3 (a failover needs a surviving majority)", n)
		}
	}
	o.systems = strings.Split(systems, ",")
	for _, s := range o.systems {
		if s != krabkaName && s != krabkaMetricsName && s != krabkaTLSName && s != "etcd" && s != "zookeeper" {
			return o, fmt.Errorf("-systems: unknown system %q (krabka, krabka-metrics, krabka-tls, etcd, zookeeper)", s)
		}
	}
	if o.traceHops {
		switch {
		case o.krabkaPprof == 0:
			return o, errors.New("-trace-hops needs -krabka-pprof")
		case !slices.Contains(o.systems, krabkaName) || !slices.Contains(o.clients, 1):
			return o, errors.New("-trace-hops needs krabka in -systems and 1 in -clients")
		case o.duration < hopsDelay+hopsTrace+time.Second:
			return o, fmt.Errorf("-trace-hops needs a -duration of at least %v", hopsDelay+hopsTrace+time.Second)
		}
	}
	if o.scrapeEvery <= 0 {
		return o, errors.New("-scrape-interval must be positive")
	}
	if o.conns < 1 || o.loopRounds < 1 || o.failRounds < 1 || o.fillWrites < 1 || o.detectMS < 100 {
		return o, errors.New("-conns, -loop-rounds, -failover-rounds and -fill must be positive and -detect-ms at least 100")
	}
	return o, nil
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// binaries are the server programs.
type binaries struct{ krabka, etcd string }

// build builds krabka from the main module (always: it is the revision
// under test) and etcd once into the cache.
func build(o options) (binaries, error) {
	cache, err := filepath.Abs(o.cache)
	if err != nil {
		return binaries{}, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return binaries{}, err
	}
	b := binaries{krabka: filepath.Join(cache, "krabka"), etcd: filepath.Join(cache, "etcd-v3.7.3")}
	cmd := exec.Command("go", "build", "-tags", o.krabkaTags, "-o", b.krabka, "./cmd/krabka")
	cmd.Dir = o.root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return b, fmt.Errorf("build krabka in %s: %w", o.root, err)
	}
	if _, err := os.Stat(b.etcd); err != nil {
		logf("building etcd v3.7.3 once into %s", b.etcd)
		cmd := exec.Command("go", "build", "-o", b.etcd, "./cmd/etcd")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return b, fmt.Errorf("build etcd: %w", err)
		}
	}
	return b, nil
}

var startTime = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(startTime).Seconds(), fmt.Sprintf(format, args...))
}

func gitRevision(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if out, _ := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); len(out) > 0 {
		rev += "+dirty"
	}
	return rev
}

// newSystems creates the clusters of size n under dir/tag.
func newSystems(o options, bins binaries, dir, tag string, n, keys int) ([]system, error) {
	var out []system
	for _, name := range o.systems {
		d := filepath.Join(dir, tag, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		var s system
		switch name {
		case krabkaName, krabkaMetricsName, krabkaTLSName:
			// Only the plain Krabka system gets the pprof ports when it runs.
			pprof := o.krabkaPprof
			if name != krabkaName && slices.Contains(o.systems, krabkaName) {
				pprof = 0
			}
			s = &krabkaSystem{bin: bins.krabka, dir: d, n: n, detectMS: o.detectMS, pprofBase: pprof, env: o.krabkaEnv,
				metrics: name == krabkaMetricsName, scrapeEvery: o.scrapeEvery, tls: name == krabkaTLSName}
		case "etcd":
			s = &etcdSystem{bin: bins.etcd, dir: d, n: n, detectMS: o.detectMS}
		case "zookeeper":
			s = &zkSystem{java: o.java, classpath: o.zkClasspath, dir: d, n: n, detectMS: o.detectMS, keys: keys}
		}
		if err := s.setup(); err != nil {
			return nil, fmt.Errorf("%s: setup: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// bringUp starts every system and waits until each serves writes.
func bringUp(ctx context.Context, systems []system) error {
	for _, s := range systems {
		if err := startAll(s); err != nil {
			return err
		}
	}
	for _, s := range systems {
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		t0 := time.Now()
		var err error
		for {
			if _, err = s.leader(wctx); err == nil || wctx.Err() != nil {
				break
			}
			sleepCtx(wctx, 50*time.Millisecond)
		}
		if err == nil {
			err = s.afterStart(wctx)
		}
		if err == nil {
			_, err = waitLeader(wctx, s)
		}
		if err == nil {
			err = waitAllFollow(wctx, s)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%s: start: %w", s.name(), err)
		}
		logf("%s: %d nodes serving (%.1fs after its start)", s.name(), len(s.nodes()), time.Since(t0).Seconds())
	}
	return nil
}

// rotate returns systems in the order of round r: each round starts
// with the next system, so no system always runs first or last.
func rotate(systems []system, r int) []system {
	k := r % len(systems)
	return append(append([]system(nil), systems[k:]...), systems[:k]...)
}

func run(ctx context.Context, o options) error {
	bins, err := build(o)
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "krabkabench-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(dir)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rep := &report{
		revision: gitRevision(o.root),
		started:  time.Now().UTC(),
		quick:    o.quick,
		command:  "go run ./cmd/krabkabench " + strings.Join(os.Args[1:], " "),
		cpus:     runtime.NumCPU(),
		load:     loadAvg(),
		detectMS: o.detectMS,
		systems:  o.systems,
		opts:     o,
	}
	limits, err := measureLimits(dir, 200)
	if err != nil {
		return fmt.Errorf("machine limits: %w", err)
	}
	rep.limits = limits
	logf("fsync p50 %v, loopback RTT p50 %v", limits.fsyncP50, limits.rttP50)
	maxClients := max(slices.Max(o.clients), 128) // fill uses 128 clients
	for _, n := range o.nodes {
		full := !o.loopsOnly && (!o.quick || n == o.nodes[0])
		res, err := runSize(ctx, o, bins, dir, n, maxClients, full)
		if err != nil {
			return err
		}
		rep.sizes = append(rep.sizes, res)
	}
	rep.duration = time.Since(startTime)
	rep.load = rep.load + " → " + loadAvg()
	text := rep.markdown()
	fmt.Print(text)
	if o.out != "" {
		for _, sz := range rep.sizes {
			if sz.hops != "" {
				text += "\n" + sz.hops
			}
		}
		return os.WriteFile(o.out, []byte(text), 0o644)
	}
	return nil
}

// sizeResult is everything measured with clusters of one size.
type sizeResult struct {
	n        int
	loops    map[string][]loopResult // per system, per concurrency
	rssMB    map[string]float64
	kill     map[string][]time.Duration
	term     map[string][]time.Duration
	restart  map[string]time.Duration
	dataMB   map[string]float64
	fillN    int
	failover bool
	hops     string // the -trace-hops breakdown, Markdown
}

func runSize(ctx context.Context, o options, bins binaries, dir string, n, keys int, full bool) (sizeResult, error) {
	res := sizeResult{n: n, loops: map[string][]loopResult{}, rssMB: map[string]float64{},
		kill: map[string][]time.Duration{}, term: map[string][]time.Duration{},
		restart: map[string]time.Duration{}, dataMB: map[string]float64{}, failover: full, fillN: o.fillWrites}
	systems, err := newSystems(o, bins, dir, fmt.Sprintf("n%d", n), n, keys)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, s := range systems {
			closeSystem(s)
			stopAll(s, syscall.SIGKILL)
		}
	}()
	logf("== %d nodes: starting %d clusters", n, len(systems))
	if err := bringUp(ctx, systems); err != nil {
		return res, err
	}
	leaders := map[string]int{}
	for _, s := range systems {
		l, err := waitLeader(ctx, s)
		if err != nil {
			return res, err
		}
		leaders[s.name()] = l
		if _, err := closedLoop(ctx, s, l, 16, min(16, o.conns), o.warmup); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}
	for _, c := range o.clients {
		runs := map[string][]loopResult{}
		for r := range o.loopRounds {
			for _, s := range rotate(systems, r+c) {
				// The leader may have changed while the other systems ran
				// (an election is a finding, so it is logged): find it
				// again rather than measure a node that turns writes away.
				l, err := waitLeader(ctx, s)
				if err != nil {
					return res, err
				}
				if l != leaders[s.name()] {
					logf("%s n=%d: the leader moved from node %d to node %d since the last run", s.name(), n, leaders[s.name()], l)
					leaders[s.name()] = l
				}
				var hopsDone chan error
				if o.traceHops && c == 1 && r == 0 && s.name() == krabkaName {
					hopsDone = make(chan error, 1)
					go func() {
						sleepCtx(ctx, hopsDelay)
						text, err := traceHops(ctx, o.krabkaPprof, n, l)
						res.hops = text
						hopsDone <- err
					}()
				}
				lr, err := closedLoop(ctx, s, l, c, min(c, o.conns), o.duration)
				if hopsDone != nil {
					if herr := <-hopsDone; herr != nil {
						return res, fmt.Errorf("-trace-hops: %w", herr)
					}
					fmt.Fprint(os.Stderr, "\n"+res.hops+"\n")
				}
				if err != nil {
					return res, err
				}
				logf("%s n=%d c=%d: %.0f ops/s p50 %v p99 %v p99.9 %v cpu %.0f µs/op (errors %d)",
					s.name(), n, c, lr.opsPerSec(), lr.p50, lr.p99, lr.p999, lr.cpuPerOpUS, lr.errors)
				runs[s.name()] = append(runs[s.name()], lr)
			}
		}
		for name, rs := range runs {
			slices.SortFunc(rs, func(a, b loopResult) int { return int(a.opsPerSec() - b.opsPerSec()) })
			res.loops[name] = append(res.loops[name], rs[len(rs)/2])
		}
	}
	for _, s := range systems {
		res.rssMB[s.name()] = float64(clusterStat(pids(s)).hwmKB) / 1024
	}
	if !full {
		return res, nil
	}
	for _, kind := range []struct {
		sig syscall.Signal
		out map[string][]time.Duration
	}{{syscall.SIGKILL, res.kill}, {syscall.SIGTERM, res.term}} {
		for r := range o.failRounds {
			for _, s := range rotate(systems, r) {
				d, err := failoverRound(ctx, s, kind.sig)
				if err != nil {
					return res, err
				}
				logf("%s n=%d %v of the leader: writing again after %v", s.name(), n, kind.sig, d)
				kind.out[s.name()] = append(kind.out[s.name()], d)
			}
		}
	}
	for _, s := range systems {
		closeSystem(s)
		stopAll(s, syscall.SIGKILL)
	}

	// Restart-to-serving on fresh clusters, so that each holds the same
	// number of writes.
	fresh, err := newSystems(o, bins, dir, fmt.Sprintf("n%d-restart", n), n, keys)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, s := range fresh {
			closeSystem(s)
			stopAll(s, syscall.SIGKILL)
		}
	}()
	if err := bringUp(ctx, fresh); err != nil {
		return res, err
	}
	for _, s := range fresh {
		t0 := time.Now()
		if err := fill(ctx, s, o.fillWrites); err != nil {
			return res, err
		}
		logf("%s n=%d: %d writes in %.1fs", s.name(), n, o.fillWrites, time.Since(t0).Seconds())
	}
	for _, s := range fresh {
		stopAll(s, syscall.SIGTERM)
		res.dataMB[s.name()] = float64(s.dataBytes()) / (1 << 20)
	}
	for _, s := range fresh {
		d, err := restartToServing(ctx, s)
		if err != nil {
			return res, err
		}
		logf("%s n=%d: restart to first write %v (%.1f MB of data)", s.name(), n, d, res.dataMB[s.name()])
		res.restart[s.name()] = d
		stopAll(s, syscall.SIGKILL)
	}
	return res, nil
}

func loadAvg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "?"
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	fs := strings.Fields(string(b))
	if len(fs) < 3 {
		return "?"
	}
	return strings.Join(fs[:3], " ")
}
