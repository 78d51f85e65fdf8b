package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one server process of a cluster. Each (re)start runs a fresh
// exec.Cmd from the node's command line; the process gets its own process
// group so that nothing it spawns outlives the benchmark.
type proc struct {
	name string
	argv []string
	env  []string
	dir  string
	log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// allProcs is every process the benchmark started, for the final cleanup
// (also on SIGINT).
var allProcs struct {
	sync.Mutex
	list []*proc
}

func newProc(name, dir, log string, env []string, argv ...string) *proc {
	p := &proc{name: name, argv: argv, env: env, dir: dir, log: log}
	allProcs.Lock()
	allProcs.list = append(allProcs.list, p)
	allProcs.Unlock()
	return p
}

// start launches the process; its output is appended to its log file.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// pid returns the running process's id, or 0.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// signal sends sig to the process group without waiting.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// stop sends sig and waits for the exit, escalating to SIGKILL after
// grace.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	p.mu.Lock()
	p.cmd, p.exited = nil, nil
	p.mu.Unlock()
}

// exitChan returns a channel closed when the running process exits.
func (p *proc) exitChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// waitExit waits for the process to exit after a signal sent by signal.
func (p *proc) waitExit(timeout time.Duration) error {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return nil
	}
	select {
	case <-exited:
		p.mu.Lock()
		p.cmd, p.exited = nil, nil
		p.mu.Unlock()
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not exit within %v", p.name, timeout)
	}
}

// killAll kills every process still running.
func killAll() {
	allProcs.Lock()
	list := append([]*proc(nil), allProcs.list...)
	allProcs.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(syscall.SIGKILL, 5*time.Second)
		}()
	}
	wg.Wait()
}

// procStat is a process's CPU time (user+system) and its peak resident
// set size.
type procStat struct {
	cpu   time.Duration
	hwmKB int64
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's utime and stime;
// 100 on every Linux platform Go supports.
const clockTick = 100

// readProcStat reads /proc/<pid>/stat (utime, stime) and
// /proc/<pid>/status (VmHWM).
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces: the fields
	// start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return procStat{}, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, err
	}
	ps := procStat{cpu: time.Duration(ut+st) * time.Second / clockTick}
	b, err = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procStat{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb := strings.TrimSuffix(strings.TrimSpace(rest), " kB")
			ps.hwmKB, _ = strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
		}
	}
	return ps, nil
}

// clusterStat sums the CPU time and the peak RSS over pids.
func clusterStat(pids []int) procStat {
	var sum procStat
	for _, pid := range pids {
		if pid == 0 {
			continue
		}
		if s, err := readProcStat(pid); err == nil {
			sum.cpu += s.cpu
			sum.hwmKB += s.hwmKB
		}
	}
	return sum
}
