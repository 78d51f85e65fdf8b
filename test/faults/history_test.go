package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// opStatus is what a client knows about an operation it ran.
type opStatus int8

const (
	// opOK: acknowledged (a write) or answered (a read).
	opOK opStatus = iota
	// opUnknown: the request went out but no definite answer came back (a
	// timeout, a dropped connection, or an error the write may survive,
	// such as NOT_LEADER_OR_FOLLOWER after forwarding): the write may or
	// may not have happened. The final log decides.
	opUnknown
	// opNotSent: the connection failed before the request was written, the
	// leader refused the write as invalid, or a read failed; the operation
	// had no effect and leaves the history.
	opNotSent
)

// op is one client operation with its real-time bounds.
type op struct {
	client    int
	node      int
	write     bool
	key       kvKey
	value     string // written, or read ("" for absent)
	call, ret time.Time
	status    opStatus
	offset    int64 // acknowledged offset of a write
	answered  bool  // an error answer came back (not a timeout), for the figures
	answerErr error
}

// kvKey is one config of one topic: the unit of the register model.
type kvKey struct{ topic, name string }

func (k kvKey) String() string { return k.topic + "/" + k.name }

// history collects the operations of every client.
type history struct {
	mu  sync.Mutex
	ops []op
}

func (h *history) add(o op) {
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

func (h *history) all() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...)
}

// notSentError marks a failure before the request reached the node.
type notSentError struct{ error }

func (e notSentError) Unwrap() error { return e.error }

// dialFirst wraps call so that a dial failure is a notSentError.
func dialFirst(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return notSentError{err}
	}
	return conn.Close()
}

// workload drives clients against the cluster: each keeps one operation
// outstanding, against a random node, with a deadline. Embedded clients
// write through the embedded hosts instead, whose controller forwards
// each submission to the leader.
type workload struct {
	c       *cluster
	t       *testing.T
	keys    []kvKey
	timeout time.Duration
	hist    history
	http    *http.Client
	// reads is false when the binary does not serve ReadImage.
	reads bool
}

// newWorkload creates the topics of the keys (before any fault) and
// probes for linearizable reads.
func newWorkload(t *testing.T, c *cluster, topics, names int) *workload {
	w := &workload{c: c, t: t, timeout: *flagTimeout,
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	for i := range topics {
		topic := fmt.Sprintf("faults-%d", i)
		c.mustSubmit(topicRecord(t, topic))
		for j := range names {
			w.keys = append(w.keys, kvKey{topic, fmt.Sprintf("key.%d", j)})
		}
	}
	// A node that does not know the request closes the connection (EOF)
	// or answers UNSUPPORTED_VERSION.
	var err error
	waitFor(t, 30*time.Second, "answer to a probe read", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = w.read(ctx, c.leader(), w.keys[0])
		return err == nil || errors.Is(err, io.EOF) || errors.Is(err, kerr.UnsupportedVersion)
	}, func() string { return fmt.Sprint(err) })
	w.reads = err == nil
	if !w.reads {
		t.Logf("the binary does not serve ReadImage (1005): %v; the history holds writes only", err)
	}
	for id := c.n + 1; id <= c.n+c.embedded; id++ {
		var state string
		waitFor(t, 60*time.Second, fmt.Sprintf("leader known to embedded host %d", id), func() bool {
			state, err = w.embedState(id)
			f := strings.Fields(state)
			return err == nil && len(f) == 3 && f[1] != "-1"
		}, func() string { return fmt.Sprint(state, err) })
		t.Logf("embedded host %d: %s", id, state)
	}
	return w
}

// embedState asks embedded host id for its role, leader and epoch.
func (w *workload) embedState(id int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.c.httpAddr(id)+"/state", nil)
	if err != nil {
		return "", err
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// read reads key on node id with a linearizable ReadImage (1005).
func (w *workload) read(ctx context.Context, id int, key kvKey) (string, error) {
	if err := dialFirst(ctx, w.c.addr(id)); err != nil {
		return "", err
	}
	req := wire.NewReadImageRequest()
	req.Linearizable = true
	req.ConfigResources = []wire.ReadImageResource{{ResourceType: 2, ResourceName: key.topic}}
	resp, err := w.c.call(ctx, w.c.addr(id), req)
	if err != nil {
		return "", err
	}
	r := resp.(*wire.ReadImageResponse)
	if err := errMessage(r.ErrorCode, r.ErrorMessage); err != nil {
		return "", err
	}
	if len(r.ConfigResources) != 1 || r.ConfigResources[0].ResourceName != key.topic {
		return "", fmt.Errorf("ReadImage of %s answered %+v", key.topic, r.ConfigResources)
	}
	for _, cfg := range r.ConfigResources[0].Configs {
		if cfg.Name == key.name && cfg.Value != nil {
			return *cfg.Value, nil
		}
	}
	return "", nil
}

// start runs w.run in the background until the returned stop is called;
// stop waits for the clients to return, and may be called again.
func (w *workload) start(clients, embedded int, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx, clients, embedded, seed)
	}()
	return func() {
		cancel()
		<-done
	}
}

// run runs clients wire clients and embedded ones, spread over the
// embedded hosts, until ctx ends.
func (w *workload) run(ctx context.Context, clients, embedded int, seed uint64) {
	var wg sync.WaitGroup
	if w.c.embedded == 0 {
		embedded = 0
	}
	for cl := range clients + embedded {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, uint64(100+cl)))
			if cl < clients {
				w.client(ctx, cl, rnd)
				return
			}
			w.embedClient(ctx, cl, w.c.n+1+(cl-clients)%w.c.embedded, rnd)
		}()
	}
	wg.Wait()
}

// embedClient writes through embedded host id until ctx ends, one
// submission outstanding, each with a deadline.
func (w *workload) embedClient(ctx context.Context, cl, id int, rnd *rand.Rand) {
	for seq := 0; ctx.Err() == nil; seq++ {
		o := op{client: cl, node: id, write: true, key: w.keys[rnd.IntN(len(w.keys))], value: fmt.Sprintf("c%d-%d", cl, seq)}
		w.runOp(&o, func(opCtx context.Context) { w.embedSubmitOp(opCtx, &o) })
		thinkTime(ctx, rnd)
	}
}

// runOp runs do under the operation deadline, records o's real-time
// bounds around it and adds o to the history.
func (w *workload) runOp(o *op, do func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	o.call = time.Now()
	do(ctx)
	o.ret = time.Now()
	w.hist.add(*o)
}

// thinkTime is a client's pause between two operations, 5 to 20 ms, cut
// short when ctx ends.
func thinkTime(ctx context.Context, rnd *rand.Rand) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(5+rnd.IntN(15)) * time.Millisecond):
	}
}

// embedSubmitOp runs one write through the embedded host o.node, whose
// controller's SubmitChange forwards it to the leader.
func (w *workload) embedSubmitOp(ctx context.Context, o *op) {
	addr := w.c.httpAddr(o.node)
	if err := dialFirst(ctx, addr); err != nil {
		o.status, o.answerErr = opNotSent, err
		return
	}
	body := configRecord(w.t, o.key.topic, o.key.name, o.value)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/submit", bytes.NewReader(body))
	if err != nil {
		o.status, o.answerErr = opNotSent, err
		return
	}
	resp, err := w.http.Do(req)
	if err != nil {
		o.status, o.answerErr = opUnknown, err
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		o.status, o.answerErr = opUnknown, err
		return
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var epoch int32
		if _, err := fmt.Sscan(string(answer), &o.offset, &epoch); err != nil {
			// Acknowledged, at an offset the answer does not say: the
			// log checker reports it misplaced.
			o.offset = -1
			w.t.Errorf("embedded host %d acknowledged %s=%s with %q", o.node, o.key, o.value, answer)
		}
		o.status = opOK
	case http.StatusUnprocessableEntity:
		// The image refused the change: it had no effect.
		o.status, o.answerErr, o.answered = opNotSent, errors.New(strings.TrimSpace(string(answer))), true
	default:
		o.status, o.answerErr, o.answered = opUnknown, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(answer))), true
	}
}

func (w *workload) client(ctx context.Context, cl int, rnd *rand.Rand) {
	hint := 0 // the leader the last answer named
	for seq := 0; ctx.Err() == nil; seq++ {
		o := op{client: cl, node: 1 + rnd.IntN(w.c.n), key: w.keys[rnd.IntN(len(w.keys))]}
		o.write = !w.reads || rnd.IntN(100) < 60
		// Most writes, and half the reads, go where the last answer said
		// the leader is: a deposed leader that still answers is where
		// stale reads and lost writes show.
		toHint := 50
		if o.write {
			toHint = 80
		}
		if hint > 0 && rnd.IntN(100) < toHint {
			o.node = hint
		}
		if o.write {
			o.value = fmt.Sprintf("c%d-%d", cl, seq)
		}
		w.runOp(&o, func(opCtx context.Context) {
			if o.write {
				hint = w.submitOp(opCtx, &o)
				return
			}
			var err error
			o.value, err = w.read(opCtx, o.node, o.key)
			o.status = opOK
			if err != nil {
				o.status, o.answerErr = opNotSent, err
			}
		})
		thinkTime(ctx, rnd)
	}
}

// submitOp runs one write and returns the leader to send the next one
// to: the node that acknowledged, the one an error answer named, or 0.
func (w *workload) submitOp(ctx context.Context, o *op) int {
	if err := dialFirst(ctx, w.c.addr(o.node)); err != nil {
		o.status, o.answerErr = opNotSent, err
		return 0
	}
	resp, err := w.c.submit(ctx, o.node, configRecord(w.t, o.key.topic, o.key.name, o.value))
	switch {
	case err == nil:
		o.status, o.offset = opOK, resp.BaseOffset
		return o.node
	case resp != nil && resp.ErrorCode == kerr.InvalidRequest.Code:
		// The leader refused the record before appending it (an unknown
		// topic after a bug lost it, for one): a definite failure.
		o.status, o.answerErr, o.answered = opNotSent, err, true
		return max(int(resp.LeaderID), 0)
	case resp != nil:
		o.status, o.answerErr, o.answered = opUnknown, err, true
		return max(int(resp.LeaderID), 0)
	default:
		o.status, o.answerErr = opUnknown, err
		return 0
	}
}

// logEntry is one ConfigRecord of the committed log.
type logEntry struct {
	offset int64
	key    kvKey
	value  string
}

// finalLog waits for every node to reach the same high watermark, checks
// that their committed logs are byte-identical up to it, and returns the
// config writes of that log.
func (c *cluster) finalLog(t *testing.T) []logEntry {
	t.Helper()
	logs := make([][]committedBatch, c.n+1)
	hwms := make([]int64, c.n+1)
	var last error
	waitFor(t, 2*time.Minute, "common high watermark", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for id := 1; id <= c.n; id++ {
			var err error
			logs[id], hwms[id], err = c.committedLog(ctx, id)
			if err != nil {
				last = fmt.Errorf("node %d: %w", id, err)
				return false
			}
		}
		for id := 2; id <= c.n; id++ {
			if hwms[id] != hwms[1] {
				last = fmt.Errorf("high watermarks %v", hwms[1:])
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprint(last) })
	for id := 2; id <= c.n; id++ {
		a, b := logs[1], logs[id]
		if len(a) != len(b) {
			t.Errorf("node 1 has %d committed batches up to %d, node %d has %d", len(a), hwms[1], id, len(b))
		}
		for i := range min(len(a), len(b)) {
			if a[i].base != b[i].base || !bytes.Equal(a[i].raw, b[i].raw) {
				t.Errorf("committed batch %d differs: node 1 at offset %d (%d bytes), node %d at offset %d (%d bytes)", i, a[i].base, len(a[i].raw), id, b[i].base, len(b[i].raw))
				break
			}
		}
	}
	t.Logf("committed logs of %d nodes byte-identical up to the high watermark %d (%d batches)", c.n, hwms[1], len(logs[1]))
	var entries []logEntry
	for _, b := range logs[1] {
		it := recordbatch.NewIterator(nil, b.raw)
		for it.Next() {
			batch := it.Batch()
			if batch.IsControl() {
				continue
			}
			for i, rec := range batch.Records {
				m, err := metadata.Decode(rec.Value)
				if err != nil {
					t.Fatalf("offset %d: %v", batch.BaseOffset+int64(i), err)
				}
				if cr, ok := m.(*metadata.ConfigRecord); ok && cr.Value != nil {
					entries = append(entries, logEntry{offset: batch.BaseOffset + int64(i), key: kvKey{cr.ResourceName, cr.Name}, value: *cr.Value})
				}
			}
		}
	}
	return entries
}

// logFigures counts the log checker's findings.
type logFigures struct {
	acked, unknown, unknownApplied, lost, duplicated, misplaced, phantom int
	// unknownAnswered counts indeterminate writes answered with an error
	// code (the rest timed out or lost their connection).
	unknownAnswered int
	reads           int
}

// checkLog checks acknowledged writes against the final log: each appears
// exactly once, at the offset it was acknowledged at; every value in the
// log was written by a client.
func checkLog(t *testing.T, ops []op, entries []logEntry) logFigures {
	t.Helper()
	at := map[string][]int64{}
	for _, e := range entries {
		at[e.value] = append(at[e.value], e.offset)
	}
	var f logFigures
	written := map[string]bool{}
	for _, o := range ops {
		if !o.write {
			if o.status == opOK {
				f.reads++
			}
			continue
		}
		written[o.value] = true
		offs := at[o.value]
		switch o.status {
		case opOK:
			f.acked++
			switch {
			case len(offs) == 0:
				f.lost++
				t.Errorf("lost: %s=%s acknowledged at offset %d by node %d is not in the committed log", o.key, o.value, o.offset, o.node)
			case len(offs) > 1:
				f.duplicated++
				t.Errorf("duplicated: %s=%s acknowledged at offset %d is in the committed log at %v", o.key, o.value, o.offset, offs)
			case offs[0] != o.offset:
				f.misplaced++
				t.Errorf("misplaced: %s=%s acknowledged at offset %d is in the committed log at %d", o.key, o.value, o.offset, offs[0])
			}
		case opUnknown:
			f.unknown++
			if o.answered {
				f.unknownAnswered++
			}
			if len(offs) > 0 {
				f.unknownApplied++
			}
			if len(offs) > 1 {
				f.duplicated++
				t.Errorf("duplicated: %s=%s (indeterminate) is in the committed log at %v", o.key, o.value, offs)
			}
		}
	}
	for v, offs := range at {
		if !written[v] {
			f.phantom++
			t.Errorf("phantom: value %q at %v was never written", v, offs)
		}
	}
	return f
}

// kvInput and kvOutput are porcupine's view of an operation.
type kvInput struct {
	write bool
	key   kvKey
	value string
}

type kvOutput struct{ value string }

// registerModel is a map of registers, partitioned by key: a write sets
// the value, a read must return the last one.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[kvKey][]porcupine.Operation{}
		var keys []kvKey
		for _, o := range h {
			k := o.Input.(kvInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], o)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvInput)
		if in.write {
			return true, in.value
		}
		return output.(kvOutput).value == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		if in.write {
			return fmt.Sprintf("write(%s, %q)", in.key, in.value)
		}
		return fmt.Sprintf("read(%s) -> %q", in.key, output.(kvOutput).value)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
}

// checkLinearizable runs porcupine over the history. An indeterminate
// write that the final log holds happened at some time after its call
// (its return is open); one the log does not hold never took effect
// (committed means permanent), so it leaves the history. It writes
// history.html into dir when the check fails.
func checkLinearizable(t *testing.T, ops []op, entries []logEntry, dir string) porcupine.CheckResult {
	t.Helper()
	inLog := map[string]bool{}
	for _, e := range entries {
		inLog[e.value] = true
	}
	var start time.Time
	if len(ops) > 0 {
		start = ops[0].call
		for _, o := range ops {
			if o.call.Before(start) {
				start = o.call
			}
		}
	}
	var h []porcupine.Operation
	for _, o := range ops {
		p := porcupine.Operation{ClientId: o.client, Input: kvInput{o.write, o.key, o.value}, Output: kvOutput{o.value},
			Call: int64(o.call.Sub(start)), Return: int64(o.ret.Sub(start))}
		switch {
		case o.status == opNotSent:
			continue
		case o.status == opUnknown && !inLog[o.value]:
			continue
		case o.status == opUnknown:
			p.Return = math.MaxInt64
		}
		h = append(h, p)
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, h, 2*time.Minute)
	if res != porcupine.Ok {
		path := filepath.Join(dir, "history.html")
		if err := porcupine.VisualizePath(registerModel, info, path); err != nil {
			t.Logf("visualisation: %v", err)
		}
		t.Errorf("porcupine: %s over %d operations; see %s", res, len(h), path)
	}
	return res
}
