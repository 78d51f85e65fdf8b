package hops

import (
	"bytes"
	"io"
	"net"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/internal/vfs"
)

const us = int64(time.Microsecond)

func TestClassify(t *testing.T) {
	const ls = "github.com/krabka-go/krabka/internal/logstore."
	cases := []struct {
		name   string
		frames []string
		want   Kind
		ok     bool
	}{
		{"append pwrite", []string{"syscall.pwrite", "os.(*File).WriteAt", "vfs.osFile.WriteAt", ls + "(*Log).appendLocked", ls + "(*Log).AppendAsLeader"}, Append, true},
		{"index write", []string{"syscall.pwrite", "os.(*File).WriteAt", ls + "(*Log).writeIndexEntries", ls + "(*Log).appendLocked"}, 0, false},
		{"log fsync", []string{"syscall.Fsync", "os.(*File).Sync", "vfs.osFile.Sync", ls + "(*Log).Sync", "raft.(*Engine).step"}, Fsync, true},
		{"seal fsync in an append", []string{"os.(*File).Sync", ls + "(*Log).sealSegment", ls + "(*Log).roll", ls + "(*Log).appendLocked"}, Fsync, true},
		{"fsync elsewhere", []string{"os.(*File).Sync", "snapshot.(*Writer).Close"}, 0, false},
		{"socket write", []string{"syscall.write", "internal/poll.(*FD).Write", "net.(*netFD).Write", "net.(*conn).Write", "transport.(*Conn).flush"}, SockWrite, true},
		{"socket read", []string{"syscall.read", "internal/poll.(*FD).Read", "net.(*netFD).Read", "bufio.(*Reader).Read"}, SockRead, true},
		{"profiling endpoint write", []string{"net.(*netFD).Write", "net.(*conn).Write", "net/http.checkConnErrorWriter.Write", "bufio.(*Writer).Flush"}, 0, false},
		{"other syscall", []string{"syscall.openat", "os.OpenFile"}, 0, false},
	}
	for _, c := range cases {
		k, ok := Classify(c.frames)
		if ok != c.ok || (ok && k != c.want) {
			t.Errorf("%s: Classify = %v, %v; want %v, %v", c.name, k, ok, c.want, c.ok)
		}
	}
}

// cycle lays one write's syscalls on the three nodes, starting at a: the
// leader's append, its fetch answer, the followers' reads, appends and
// fsyncs (follower 0's fsync takes fsync0, follower 1's fsync1), their
// next fetches, the leader's reads of them and its answer to the
// client. It returns the start of the next cycle: the client's round
// trip takes 30 µs after that answer.
func cycle(l, f0, f1 *Node, a, fsync0, fsync1 int64) int64 {
	add := func(n *Node, k Kind, start, dur int64) { n.Spans[k] = append(n.Spans[k], Span{start, start + dur}) }
	add(l, Append, a, 10*us)
	add(l, SockWrite, a+20*us, 5*us) // to follower 0
	add(l, SockWrite, a+26*us, 5*us) // to follower 1
	add(l, Fsync, a+15*us, 200*us)   // the leader's own, off the path
	var end int64
	for _, f := range []struct {
		n     *Node
		fsync int64
	}{{f0, fsync0}, {f1, fsync1}} {
		add(f.n, SockRead, a+40*us, 3*us)                // a read that finds nothing yet
		add(f.n, SockRead, a+50*us, 5*us)                // the fetch answer: done at +55
		add(f.n, Append, a+70*us, 8*us)                  // read done → append: 15 µs
		add(f.n, Fsync, a+90*us, f.fsync)                // append → fsync: 20 µs
		add(f.n, SockWrite, a+90*us+f.fsync+12*us, 4*us) // fsync end → fetch: 12 µs
		if e := a + 90*us + f.fsync + 12*us; end == 0 || e < end {
			end = e
		}
	}
	add(l, SockRead, end+25*us, 6*us)  // fetch sent → read done: 31 µs
	add(l, SockWrite, end+70*us, 5*us) // read done → reply: 39 µs
	return end + 100*us                // reply → next append: 30 µs
}

func TestAnalyze(t *testing.T) {
	l, f0, f1 := &Node{}, &Node{}, &Node{}
	a := int64(1_000_000_000)
	// 100 cycles: follower 1 fsyncs faster in most of them, follower 0
	// in every tenth; two cycles have fsyncs of 5 and 9 ms on both
	// followers (the slower one still done within the cycle).
	for i := range 100 {
		fs0, fs1 := int64(300*us), int64(250*us)
		if i%10 == 0 {
			fs0 = 150 * us
		}
		switch i {
		case 50:
			fs0, fs1 = 9000*us, 9050*us
		case 80:
			fs0, fs1 = 5000*us, 5050*us
		}
		a = cycle(l, f0, f1, a, fs0, fs1)
	}
	// The last cycle has no next append: 100 leader appends, 99 cycles
	// (the 100th append's cycle has no end).
	b := Analyze(l, []*Node{f0, f1})
	if b.Appends != 100 || b.Cycles != 99 {
		t.Fatalf("appends %d cycles %d, want 100 and 99", b.Appends, b.Cycles)
	}
	rows := map[string]Row{}
	for _, r := range b.Rows {
		rows[r.Name] = r
	}
	check := func(name string, n int, p50, p90, p99 int64) {
		t.Helper()
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row %q", name)
		}
		if r.N != n || r.P50 != time.Duration(p50) || r.P90 != time.Duration(p90) || r.P99 != time.Duration(p99) {
			t.Errorf("%s: n %d p50 %v p90 %v p99 %v; want %d %v %v %v", name, r.N, r.P50, r.P90, r.P99,
				n, time.Duration(p50), time.Duration(p90), time.Duration(p99))
		}
	}
	// The quorum's fsync, over cycles 0 to 98: 150 µs in 8 (0, 10, ...,
	// 90 but 50 and 80), 9000 in cycle 50, 5000 in cycle 80, 250 in the
	// other 89.
	check("follower fsync", 99, 250*us, 250*us, 9000*us)
	// The cycle is 90 µs + the quorum's fsync + 12 + 100.
	check("cycle: leader append → next leader append", 99, 452*us, 452*us, 9202*us)
	check("leader append → leader's first socket write", 99, 20*us, 20*us, 20*us)
	check("leader socket write → follower read done", 99, 35*us, 35*us, 35*us)
	check("follower read done → follower append", 99, 15*us, 15*us, 15*us)
	check("follower append → follower fsync start", 99, 20*us, 20*us, 20*us)
	check("follower fsync end → fetch sent", 99, 12*us, 12*us, 12*us)
	check("fetch sent → leader read done", 99, 31*us, 31*us, 31*us)
	check("leader read done → leader's next socket write", 99, 39*us, 39*us, 39*us)
	check("that socket write → next leader append", 99, 30*us, 30*us, 30*us)
	check("follower fsync end → next leader append", 99, 112*us, 112*us, 112*us)
	check("leader fsync", 99, 200*us, 200*us, 200*us)
	check("leader pwrite (the append's syscall)", 100, 10*us, 10*us, 10*us)
	check("follower pwrite (the append's syscall)", 99, 8*us, 8*us, 8*us)

	// The hops of a cycle add up to the cycle.
	var sum time.Duration
	for _, name := range hopNames {
		sum += rows[name].P50
	}
	if sum != rows["cycle: leader append → next leader append"].P50 {
		t.Errorf("the hops' medians add up to %v, the cycle's median is %v", sum, rows["cycle: leader append → next leader append"].P50)
	}

	if len(b.Slow) != 2 || b.SlowWithDisk != 2 {
		t.Fatalf("slow cycles %d (with disk %d), want 2 (2)", len(b.Slow), b.SlowWithDisk)
	}
	if b.Slow[1].Cycle != time.Duration(5202*us) {
		t.Errorf("the second slow cycle lasted %v, want the shorter one, 5.202ms", b.Slow[1].Cycle)
	}
	s := b.Slow[0]
	if s.Cycle != time.Duration(9202*us) || s.Hop != "follower fsync" || s.HopTaken != time.Duration(9000*us) || len(s.Long) != 2 || !strings.HasPrefix(s.Long[0], "F1 fsync 9.00 ms") || !strings.HasPrefix(s.Long[1], "F2 fsync 9.05 ms") {
		t.Errorf("slow cycle %+v", s)
	}
	md := b.Markdown()
	for _, want := range []string{"| follower fsync | 99 | 250.0 | 250.0 | 9000.0 |", "2 cycles over 4ms; 2 of them", "- 9.20 ms (longest hop: follower fsync, 9.00 ms): F1 fsync 9.00 ms at +0.09 ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}

func TestAnalyzeSkipsCyclesWithoutAFollower(t *testing.T) {
	l, f := &Node{}, &Node{}
	// Two leader appends 1 ms apart, the follower appends only after
	// the second: no cycle can be measured.
	l.Spans[Append] = []Span{{1e9, 1e9 + 10*us}, {1e9 + 1000*us, 1e9 + 1010*us}}
	f.Spans[Append] = []Span{{1e9 + 1100*us, 1e9 + 1110*us}}
	f.Spans[Fsync] = []Span{{1e9 + 1200*us, 1e9 + 1400*us}}
	b := Analyze(l, []*Node{f})
	if b.Appends != 2 || b.Cycles != 0 || b.Rows[0].N != 0 {
		t.Errorf("appends %d cycles %d rows[0] %+v, want 2, 0 and no cycle", b.Appends, b.Cycles, b.Rows[0])
	}
	if !strings.Contains(b.Markdown(), "| cycle: leader append → next leader append | 0 | | | |") {
		t.Errorf("the table shows a measured cycle:\n%s", b.Markdown())
	}
}

func monoNow(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

// TestRead traces this process while it appends to a log, fsyncs it and
// sends bytes over a loopback connection, and reads the trace back.
func TestRead(t *testing.T) {
	log, _, err := logstore.Open(vfs.OS(), t.TempDir(), logstore.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	defer server.Close()

	// The log's first append writes the epoch checkpoint too (with its
	// fsyncs): done before the trace, so that the traced appends are
	// plain ones.
	appendSync := func() {
		var b recordbatch.Builder
		b.Reset(nil, recordbatch.DefaultParams())
		b.Append(1, nil, []byte("value"), nil)
		batch, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.AppendAsLeader(batch, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := log.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	appendSync()

	const n = 5
	var buf bytes.Buffer
	before := monoNow(t)
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 64)
	for range n {
		appendSync()
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(server, msg); err != nil {
			t.Fatal(err)
		}
	}
	trace.Stop()
	after := monoNow(t)

	node, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[Kind]int{Append: n, Fsync: n, SockWrite: n, SockRead: n} {
		spans := node.Spans[k]
		// Reads may come twice (one finding nothing, then the data),
		// nothing else.
		if len(spans) < want || (k != SockRead && len(spans) != want) {
			t.Errorf("%v: %d spans, want %d", k, len(spans), want)
		}
		for i, s := range spans {
			if s.Start < before || s.End > after || s.End < s.Start {
				t.Errorf("%v span %d [%d, %d] is not within the traced time [%d, %d] on CLOCK_MONOTONIC", k, i, s.Start, s.End, before, after)
			}
			if i > 0 && s.Start < spans[i-1].Start {
				t.Errorf("%v spans not sorted at %d", k, i)
			}
		}
	}
	// Each append comes before its fsync, which comes before the write.
	for i := range min(len(node.Spans[Append]), len(node.Spans[Fsync]), len(node.Spans[SockWrite])) {
		a, f, w := node.Spans[Append][i], node.Spans[Fsync][i], node.Spans[SockWrite][i]
		if a.End > f.Start || f.End > w.Start {
			t.Errorf("write %d: append %v, fsync %v, socket write %v out of order", i, a, f, w)
		}
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	if _, err := Read(strings.NewReader("not a trace")); err == nil {
		t.Error("Read accepted a text that is not a trace")
	}
}
