package client_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/client"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// fakeController is a listener that answers ApiVersions and
// DescribeCluster (naming itself node 1, the leader) as a controller
// does, and every other request with what answer returns: a response, or
// raw body bytes written after a correct response header.
type fakeController struct {
	ln     net.Listener
	answer func(req kmsg.Request) (kmsg.Response, []byte)
	// cluster, when set, changes the DescribeCluster answer; versions
	// the ApiVersions answer.
	cluster  func(*kmsg.DescribeClusterResponse)
	versions func(*kmsg.ApiVersionsResponse)
	wg       sync.WaitGroup
	mu       sync.Mutex
	keys     []int16
	conns    []net.Conn
}

func newFakeController(t *testing.T, answer func(req kmsg.Request) (kmsg.Response, []byte)) *fakeController {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeController{ln: ln, answer: answer}
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return f
}

func (f *fakeController) addr() string { return f.ln.Addr().String() }

func (f *fakeController) requests() []int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int16(nil), f.keys...)
}

func (f *fakeController) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fakeController) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Go(func() { f.serve(c) })
	}
}

func (f *fakeController) serve(c net.Conn) {
	defer c.Close()
	var buf []byte
	for {
		frame, err := wire.ReadFrame(c, buf, 1<<20)
		if err != nil {
			return
		}
		req, err := wire.DecodeRequest(frame)
		if err != nil {
			return
		}
		corr := req.Header.CorrelationID
		f.mu.Lock()
		f.keys = append(f.keys, req.Body.Key())
		f.mu.Unlock()
		var out []byte
		switch body := req.Body.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := wire.AnswerAPIVersions(body, wire.FeatureState{})
			if f.versions != nil {
				f.versions(resp)
			}
			out = wire.AppendResponse(nil, corr, resp)
		case *kmsg.DescribeClusterRequest:
			host, port, _ := net.SplitHostPort(f.addr())
			p, _ := strconv.Atoi(port)
			resp := body.ResponseKind().(*kmsg.DescribeClusterResponse)
			resp.SetVersion(body.GetVersion())
			resp.ControllerID, resp.EndpointType = 1, wire.EndpointTypeController
			resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: 1, Host: host, Port: int32(p)}}
			if f.cluster != nil {
				f.cluster(resp)
			}
			out = wire.AppendResponse(nil, corr, resp)
		default:
			resp, raw := f.answer(req.Body)
			if resp != nil {
				resp.SetVersion(req.Body.GetVersion())
				out = wire.AppendResponse(nil, corr, resp)
				break
			}
			// Response header v1 (flexible): correlation id, no tags.
			out = binary.BigEndian.AppendUint32(nil, uint32(4+1+len(raw)))
			out = binary.BigEndian.AppendUint32(out, uint32(corr))
			out = append(append(out, 0), raw...)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
		buf = frame
	}
}

// dialFake dials a Client to f.
func dialFake(t *testing.T, f *fakeController) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Controllers = []string{f.addr()}
	cfg.RequestTimeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestMalformedAnswers: answers that do not decode, or decode to
// something a controller never sends, fail the call with
// ErrMalformedResponse (a submission also with ErrOutcomeUnknown), never
// a panic, and the Client keeps working.
func TestMalformedAnswers(t *testing.T) {
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	cases := []struct {
		name   string
		answer func(kmsg.Request) (kmsg.Response, []byte)
	}{
		{"garbage body", func(kmsg.Request) (kmsg.Response, []byte) { return nil, garbage }},
		{"empty body", func(kmsg.Request) (kmsg.Response, []byte) { return nil, []byte{} }},
		{"truncated body", func(req kmsg.Request) (kmsg.Response, []byte) {
			resp := req.ResponseKind()
			resp.SetVersion(0)
			b := resp.AppendTo(nil)
			return nil, b[:len(b)/2]
		}},
		{"success without an offset, fewer topics than asked", func(req kmsg.Request) (kmsg.Response, []byte) {
			resp := req.ResponseKind()
			if r, ok := resp.(*client.MetadataFetchResponse); ok {
				r.ErrorCode = 1000 // no such Kafka code
			}
			return resp, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := dialFake(t, newFakeController(t, tc.answer))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := cl.SubmitChange(ctx, []metadata.Record{topic("x")})
			if !errors.Is(err, client.ErrMalformedResponse) || !errors.Is(err, client.ErrOutcomeUnknown) {
				t.Errorf("SubmitChange = %v, want ErrMalformedResponse and ErrOutcomeUnknown", err)
			}
			req := client.NewReadImageRequest()
			req.TopicNames = []string{"a"}
			if _, err := cl.ReadImage(ctx, req); !errors.Is(err, client.ErrMalformedResponse) {
				t.Errorf("ReadImage = %v, want ErrMalformedResponse", err)
			}
			_, err = cl.MetadataFetch(ctx, 0, 100)
			if err == nil {
				t.Error("MetadataFetch succeeded")
			}
			if ctx.Err() != nil {
				t.Errorf("a malformed answer was retried until the deadline: %v", err)
			}
		})
	}
}

// TestSubmitMovesOnOnlyWhenNothingWasSent: a leader whose address
// refuses connections gets nothing, so the submission goes to the next
// controller and commits there; the answer's leader becomes the Client's.
func TestSubmitMovesOnOnlyWhenNothingWasSent(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	_ = dead.Close()
	srv := newFakeController(t, func(req kmsg.Request) (kmsg.Response, []byte) {
		resp := req.ResponseKind().(*client.SubmitChangeResponse)
		resp.LeaderID, resp.LeaderEpoch, resp.BaseOffset, resp.Epoch = 1, 9, 40, 9
		return resp, nil
	})
	srv.cluster = func(resp *kmsg.DescribeClusterResponse) {
		// Node 2, said to lead, is at an address that refuses.
		resp.ControllerID = 2
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: 2, Host: "127.0.0.1", Port: int32(deadPort)})
	}
	cl := dialFake(t, srv)
	if id, _ := cl.Leader(); id != 2 {
		t.Fatalf("Leader() = %d after Dial, want 2 from DescribeCluster", id)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cl.SubmitChange(ctx, []metadata.Record{topic("x")})
	if err != nil {
		t.Fatalf("SubmitChange = %v, want it to move on from the refusing leader", err)
	}
	if res.Offset != 40 || res.Epoch != 9 {
		t.Errorf("SubmitChange = %+v, want offset 40 in epoch 9", res)
	}
	if id, epoch := cl.Leader(); id != 1 || epoch != 9 {
		t.Errorf("Leader() = %d in epoch %d, want 1 in 9 from the answer", id, epoch)
	}
}

// garbageController answers every request with a frame whose body does
// not decode.
func garbageController(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				for {
					frame, err := wire.ReadFrame(c, nil, 1<<20)
					if err != nil || len(frame) < 8 {
						return
					}
					out := binary.BigEndian.AppendUint32(nil, 4+3)
					out = append(out, frame[4:8]...) // the correlation id
					out = append(out, 0xff, 0xff, 0xff)
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// TestDialSkipsABadController: a bootstrap entry that answers garbage is
// not asked again, and Dial goes on to the next; when every entry is bad
// Dial fails at once with ErrMalformedResponse.
func TestDialSkipsABadController(t *testing.T) {
	bad := garbageController(t)
	good := newFakeController(t, nil)
	cfg := client.DefaultConfig()
	cfg.Controllers = []string{bad, good.addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial past a bad controller: %v", err)
	}
	cl.Close()

	cfg.Controllers = []string{bad, garbageController(t)}
	if _, err := client.Dial(ctx, cfg); !errors.Is(err, client.ErrMalformedResponse) || ctx.Err() != nil {
		t.Errorf("Dial to bad controllers only = %v, want ErrMalformedResponse before the deadline", err)
	}
}
