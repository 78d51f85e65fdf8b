package transport

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
)

// heldReplies is a handler that keeps every request's Reply until the test
// answers it; take returns the first n requests and their replies, in
// arrival order.
func heldReplies(n int) (h Handler, take func() ([]*Request, []*Reply)) {
	reqs := make(chan *Request, n)
	replies := make(chan *Reply, n)
	h = HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		reqs <- req
		replies <- reply
	})
	return h, func() ([]*Request, []*Reply) {
		var rs []*Request
		var ps []*Reply
		for range n {
			rs = append(rs, <-reqs)
			ps = append(ps, <-replies)
		}
		return rs, ps
	}
}

// Answers that are ready together leave in one write: here the handler
// completes eight requests in reverse order, so the first in sequence is
// the last to complete and all eight are pending when the writer may
// start. The client still reads them in request order.
func TestAnswersReadyTogetherShareOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		h, take := heldReplies(n)
		n0 := NewMemNetwork()
		writes := 0
		cfg := testServerConfig(h)
		cfg.Handshake = handshakeFunc(func(_ context.Context, nc net.Conn) (net.Conn, Principal, error) {
			return wrappedConn{Conn: nc, writes: &writes}, Principal{}, nil
		})
		memServer(t, n0, cfg)
		c := memDial(t, n0, "10.0.0.1")
		for i := range int32(n) {
			c.send(i, describeQuorum())
		}
		heldReqs, held := take()
		for i := n - 1; i >= 0; i-- {
			held[i].Send(heldReqs[i].Body.ResponseKind())
		}
		for i := range int32(n) {
			if corr, _ := c.recv(describeQuorum()); corr != i {
				t.Fatalf("answer %d has correlation id %d", i, corr)
			}
		}
		if writes != 1 {
			t.Errorf("%d writes for %d answers completed together, want 1", writes, n)
		}
	})
}

// Pipelined requests that arrive together are read together: the client
// sends eight frames in one write, and the server reads them with one
// read from the connection, not two per frame (size, then body).
func TestPipelinedRequestsAreReadTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		n0 := NewMemNetwork()
		var reads, writes atomic.Int64
		cfg := testServerConfig(echoHandler())
		cfg.Handshake = handshakeFunc(func(_ context.Context, nc net.Conn) (net.Conn, Principal, error) {
			return countingConn{Conn: nc, reads: &reads, writes: &writes}, Principal{}, nil
		})
		memServer(t, n0, cfg)
		c := memDial(t, n0, "10.0.0.1")
		id := "test"
		var frames []byte
		for i := range int32(n) {
			var err error
			if frames, err = wire.AppendRequest(frames, i, &id, describeQuorum()); err != nil {
				t.Fatal(err)
			}
		}
		c.writeRaw(frames)
		for i := range int32(n) {
			if corr, _ := c.recv(describeQuorum()); corr != i {
				t.Fatalf("answer %d has correlation id %d", i, corr)
			}
		}
		if got := reads.Load(); got != 1 {
			t.Errorf("%d reads for %d requests sent together, want 1", got, n)
		}
	})
}

// countingConn counts the reads and writes on a connection, safely for a
// benchmark that reads the counts from another goroutine.
type countingConn struct {
	net.Conn
	reads, writes *atomic.Int64
}

// Read counts the reads that returned data (a read still blocked is not
// counted).
func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// BenchmarkGroupCommitAnswers is the leader's side of many clients
// sharing one connection: the client pipelines 16 requests and the
// handler answers them together, as a group commit completes many writes
// at once. One op is one request and its answer over loopback TCP;
// reads/request and writes/answer count the server's system calls on the
// connection.
func BenchmarkGroupCommitAnswers(b *testing.B) {
	const group = 16
	var mu sync.Mutex
	var pending []*Reply
	var pendingReqs []*Request
	h := HandlerFunc(func(_ context.Context, req *Request, reply *Reply) {
		mu.Lock()
		defer mu.Unlock()
		pending = append(pending, reply)
		pendingReqs = append(pendingReqs, req)
		if len(pending) == group {
			for i, r := range pending {
				r.Send(pendingReqs[i].Body.ResponseKind())
			}
			pending, pendingReqs = pending[:0], pendingReqs[:0]
		}
	})
	var reads, writes atomic.Int64
	cfg := DefaultServerConfig()
	cfg.Handler = h
	cfg.Handshake = handshakeFunc(func(_ context.Context, nc net.Conn) (net.Conn, Principal, error) {
		return countingConn{Conn: nc, reads: &reads, writes: &writes}, Principal{}, nil
	})
	nc, frames := dialGroup(b, startTCP(b, cfg), "bench", group, describeQuorum())
	defer nc.Close()
	var buf []byte
	var err error
	read := func() {
		if buf, err = wire.ReadFrame(nc, buf, wire.DefaultMaxFrameSize); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	answers := 0
	for b.Loop() {
		if answers%group == 0 {
			if _, err := nc.Write(frames); err != nil {
				b.Fatal(err)
			}
		}
		read()
		answers++
	}
	// Read the rest of the last group: the handler then holds nothing.
	for ; answers%group != 0; answers++ {
		read()
	}
	b.ReportMetric(float64(reads.Load())/float64(answers), "reads/request")
	b.ReportMetric(float64(writes.Load())/float64(answers), "writes/answer")
}

// TestServedRequestAllocations bounds the heap objects a served request
// costs, the client's side of the test included: 5, among them its frame,
// its decoded body, the handler's answer and the request with its Reply
// (one object). The connection's decoder keeps the client id, so the
// header costs none. The old path allocated 8 per request: the Request and
// the Reply apart, the wire.Request and the client id string besides.
func TestServedRequestAllocations(t *testing.T) {
	if perRequest := servedAllocations(t, describeQuorum()); perRequest > 5.5 {
		t.Fatalf("%.2f heap objects per served request, want 5", perRequest)
	}
}

// TestServedFetchAllocations: a Fetch, which a follower sends without
// pause, is decoded into the connection's one Fetch request from a frame
// read into the previous Fetch's buffer (wire.Request.Transient). It
// costs its partition list and its cluster id's pointer, the handler's
// answer and the request with its Reply: 4 objects (9 when each Fetch had
// a frame, a request and a copy of its cluster id of its own).
func TestServedFetchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(18)
	cluster := "MkU3OEVBNTcwNTJENDM2Qg"
	req.ClusterID = &cluster
	tp := kmsg.NewFetchRequestTopic()
	tp.TopicID[15] = 1
	tp.Partitions = append(tp.Partitions, kmsg.NewFetchRequestTopicPartition())
	req.Topics = append(req.Topics, tp)
	if perRequest := servedAllocations(t, req); perRequest > 4.5 {
		t.Fatalf("%.2f heap objects per served Fetch, want 4", perRequest)
	}
}

// servedAllocations returns the heap objects per request served by the
// echo handler, in groups of 16 copies of req written at once.
func servedAllocations(t *testing.T, req kmsg.Request) float64 {
	const group = 16
	cfg := DefaultServerConfig()
	cfg.Handler = echoHandler()
	nc, frames := dialGroup(t, startTCP(t, cfg), "alloc-test", group, req)
	defer nc.Close()
	var buf []byte
	var err error
	round := func() {
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		for range group {
			if buf, err = wire.ReadFrame(nc, buf, wire.DefaultMaxFrameSize); err != nil {
				t.Fatal(err)
			}
		}
	}
	round()
	return testing.AllocsPerRun(20, round) / group
}

// dialGroup connects to s and frames group copies of req with
// correlation ids 0 to group-1, to be written at once.
func dialGroup(tb testing.TB, s *Server, clientID string, group int, req kmsg.Request) (net.Conn, []byte) {
	tb.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	var frames []byte
	for i := range int32(group) {
		if frames, err = wire.AppendRequest(frames, i, &clientID, req); err != nil {
			nc.Close()
			tb.Fatal(err)
		}
	}
	return nc, frames
}
