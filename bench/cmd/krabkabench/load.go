package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// loopResult is one closed-loop run of one system.
type loopResult struct {
	clients    int
	ops        int
	errors     int
	elapsed    time.Duration
	p50        time.Duration
	p99        time.Duration
	p999       time.Duration
	cpuPerOpUS float64
}

func (r loopResult) opsPerSec() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// closedLoop runs clients concurrent writers, each writing its own key
// back to back, over conns connections to the leader, for d. The server
// CPU is the utime+stime delta of every node of the cluster over the run.
func closedLoop(ctx context.Context, s system, leader, clients, conns int, d time.Duration) (loopResult, error) {
	w, err := s.dial(ctx, leader, conns)
	if err != nil {
		return loopResult{}, fmt.Errorf("%s: dial: %w", s.name(), err)
	}
	defer w.close()
	lat := make([][]time.Duration, clients)
	errs := make([]int, clients)
	lastErr := make([]error, clients)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := make(chan struct{})
	var deadline time.Time
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			l := make([]time.Duration, 0, 4096)
			for runCtx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				opCtx, opCancel := context.WithTimeout(runCtx, 10*time.Second)
				err := w.write(opCtx, c)
				opCancel()
				if err != nil {
					if runCtx.Err() == nil {
						errs[c]++
						lastErr[c] = err
						sleepCtx(runCtx, 10*time.Millisecond)
					}
					continue
				}
				l = append(l, time.Since(t0))
			}
			lat[c] = l
		}()
	}
	ps := pids(s)
	before := clusterStat(ps)
	t0 := time.Now()
	deadline = t0.Add(d)
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	after := clusterStat(ps)
	var all []time.Duration
	r := loopResult{clients: clients, elapsed: elapsed}
	for c := range clients {
		all = append(all, lat[c]...)
		r.errors += errs[c]
	}
	slices.Sort(all)
	r.ops = len(all)
	if r.ops == 0 {
		return r, fmt.Errorf("%s: no write succeeded in %v (%d errors): %w", s.name(), d, r.errors, errors.Join(lastErr...))
	}
	r.p50, r.p99, r.p999 = quantile(all, 0.5), quantile(all, 0.99), quantile(all, 0.999)
	r.cpuPerOpUS = float64((after.cpu - before.cpu).Microseconds()) / float64(r.ops)
	return r, nil
}

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// probeInterval is how often the failover and restart probes start a new
// write, each with its own deadline, so the measured time does not
// depend on how long one attempt blocks.
const probeInterval = 20 * time.Millisecond

// probeUntilWrite starts a write through w every probeInterval from t0
// until one succeeds, and returns the time from t0 to that success.
func probeUntilWrite(ctx context.Context, w writer, t0 time.Time, limit time.Duration) (time.Duration, error) {
	return probeGap(ctx, w, t0, nil, limit)
}

// probeGap starts a write through w every probeInterval from t0 and
// returns the longest time without a successful write, counted from t0
// and up to the first success that completes after gone is closed (nil:
// the first success). A server that keeps serving for a while after it
// was asked to stop, then goes, is thus charged for the gap its departure
// leaves, not credited for the writes it took while leaving.
func probeGap(ctx context.Context, w writer, t0 time.Time, gone <-chan struct{}, limit time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	won := make(chan time.Time, 1024)
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	last, gap := t0, time.Duration(0)
	var goneAt time.Time
	if gone == nil {
		goneAt = t0
	}
	for k := 0; ; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			defer pcancel()
			if w.write(pctx, k%8) == nil {
				select {
				case won <- time.Now():
				default:
				}
			}
		}()
	wait:
		select {
		case t := <-won:
			if t.After(last) {
				gap = max(gap, t.Sub(last))
				last = t
			}
			if !goneAt.IsZero() && t.After(goneAt) {
				return gap, nil
			}
			goto wait
		case <-gone:
			goneAt, gone = time.Now(), nil
			goto wait
		case <-ctx.Done():
			return 0, fmt.Errorf("no write succeeded within %v", limit)
		case <-tick.C:
		}
	}
}

// failoverRound stops the leader with sig (SIGKILL or SIGTERM), measures
// the time until a client already connected to the survivors writes
// again, then restarts the stopped node and waits until every node
// follows a leader again.
func failoverRound(ctx context.Context, s system, sig syscall.Signal) (time.Duration, error) {
	leader, err := waitLeader(ctx, s)
	if err != nil {
		return 0, err
	}
	var survivors []int
	for i := range s.nodes() {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	w, err := s.dialAny(ctx, survivors)
	if err != nil {
		return 0, fmt.Errorf("%s: dial the survivors: %w", s.name(), err)
	}
	defer w.close()
	// The probe client is warm: one write through it first.
	if _, err := probeUntilWrite(ctx, w, time.Now(), 30*time.Second); err != nil {
		return 0, fmt.Errorf("%s: warm-up write: %w", s.name(), err)
	}
	p := s.nodes()[leader]
	gone := p.exitChan()
	t0 := time.Now()
	if err := p.signal(sig); err != nil {
		return 0, err
	}
	took, err := probeGap(ctx, w, t0, gone, 60*time.Second)
	if err != nil {
		return 0, fmt.Errorf("%s: after %v of node %d: %w", s.name(), sig, leader+1, err)
	}
	if err := p.waitExit(30 * time.Second); err != nil {
		p.stop(syscall.SIGKILL, 5*time.Second)
	}
	if err := p.start(); err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, 180*time.Second)
	defer cancel()
	if err := waitAllFollow(wctx, s); err != nil {
		return 0, fmt.Errorf("%w; the end of %s:\n%s", err, p.log, logTail(p.log, 20))
	}
	return took, nil
}

// restartToServing stops every node gracefully, starts them all again
// and returns the time from the start until a write succeeds.
func restartToServing(ctx context.Context, s system) (time.Duration, error) {
	stopAll(s, syscall.SIGTERM)
	t0 := time.Now()
	if err := startAll(s); err != nil {
		return 0, err
	}
	all := make([]int, len(s.nodes()))
	for i := range all {
		all[i] = i
	}
	// The probe connects while the servers start: dial until it works.
	var w writer
	for {
		var err error
		w, err = s.dialAny(ctx, all)
		if err == nil {
			break
		}
		if time.Since(t0) > 60*time.Second {
			return 0, fmt.Errorf("%s: connect after restart: %w", s.name(), err)
		}
		sleepCtx(ctx, probeInterval)
	}
	defer w.close()
	return probeUntilWrite(ctx, w, t0, 120*time.Second)
}

// fill writes total values with 128 concurrent clients to the leader;
// when writes keep failing (the leader moved), it finds the leader again
// and goes on.
func fill(ctx context.Context, s system, total int) error {
	deadline := time.Now().Add(10 * time.Minute)
	left := total
	for left > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: fill: %d of %d writes still to do after 10 minutes", s.name(), left, total)
		}
		l, err := waitLeader(ctx, s)
		if err != nil {
			return err
		}
		var firstErr error
		left, firstErr = fillFrom(ctx, s, l, left)
		if firstErr != nil {
			logf("%s: fill: writes to node %d failed (%v); finding the leader again", s.name(), l+1, firstErr)
		}
	}
	return nil
}

// fillFrom writes up to total values to node l and returns how many are
// left when it stops: all done, or after 100 failed writes.
func fillFrom(ctx context.Context, s system, l, total int) (int, error) {
	w, err := s.dial(ctx, l, 8)
	if err != nil {
		return total, err
	}
	defer w.close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	left, failed := total, 0
	var firstErr error
	for c := range 128 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if left == 0 || failed >= 100 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := w.write(wctx, c)
				cancel()
				if err != nil {
					mu.Lock()
					left++
					failed++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					sleepCtx(ctx, 10*time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return left, firstErr
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
