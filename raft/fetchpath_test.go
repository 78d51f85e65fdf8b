package raft

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/recordbatch"
	"github.com/krabka-go/krabka/metadata"
)

// fetchedBatches encodes data batches of n[i] records each, at
// consecutive offsets from 0, one after another as a Fetch answer holds
// them; it also returns each batch apart.
func fetchedBatches(t *testing.T, n ...int) (raw []byte, batches [][]byte) {
	t.Helper()
	base := int64(0)
	for _, records := range n {
		var b recordbatch.Builder
		p := recordbatch.DefaultParams()
		p.BaseOffset, p.PartitionLeaderEpoch = base, 1
		b.Reset(nil, p)
		for range records {
			b.Append(0, nil, []byte("v"), nil)
		}
		enc, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, enc...)
		batches = append(batches, enc)
		base += int64(records)
	}
	return raw, batches
}

// TestHeldFetchedBatch: the batches of a Fetch answer are found by base
// offset, in order (each header read once) or not, and a trailing partial
// batch or an offset no batch starts at finds nothing.
func TestHeldFetchedBatch(t *testing.T) {
	raw, batches := fetchedBatches(t, 2, 1, 2)
	h := &heldRecords{raw: append(raw, batches[0][:20]...), fetched: true}
	for _, c := range []struct {
		base kraft.Offset
		want []byte
	}{{0, batches[0]}, {2, batches[1]}, {3, batches[2]}, {2, batches[1]}, {0, batches[0]}, {1, nil}, {5, nil}} {
		if got := h.batch(c.base); !bytes.Equal(got, c.want) {
			t.Errorf("batch(%d) = %d bytes, want %d", c.base, len(got), len(c.want))
		}
	}
}

// TestHoldFetchedAllocations: a follower keeps a Fetch answer's batches
// under a handle with two objects, the held records and the core's batch
// list (four when a map indexed the batches), and learns nothing new,
// allocating nothing, from the leader's endpoint that every answer names
// (a map and the endpoint's host:port each time before).
func TestHoldFetchedAllocations(t *testing.T) {
	raw, _ := fetchedBatches(t, 1)
	e := &engine{learned: map[kraft.NodeID]string{}, logger: slog.New(slog.DiscardHandler)}
	e.rc.id = 2
	if a := testing.AllocsPerRun(100, func() {
		m := &kraft.FetchResponse{}
		e.holdFetched(m, raw)
		if len(m.Batches) != 1 || m.Records == 0 {
			t.Fatalf("held %d batches under handle %d", len(m.Batches), m.Records)
		}
		e.handles.release()
	}); a > 2 {
		t.Errorf("holding a Fetch answer of one batch costs %v allocations, want 2", a)
	}

	resp := kmsg.NewPtrFetchResponse()
	resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "::1", Port: 9093}}
	var buf [1]nodeEndpoint
	eps := answerEndpoints(resp, buf[:0])
	e.learnEndpoints(eps)
	if got := e.learned[1]; got != "[::1]:9093" {
		t.Fatalf("learned %q for node 1, want [::1]:9093", got)
	}
	if a := testing.AllocsPerRun(100, func() { e.learnEndpoints(answerEndpoints(resp, buf[:0])) }); a != 0 {
		t.Errorf("an answer naming a known endpoint costs %v allocations, want 0", a)
	}
	resp.Brokers[0].Port = 9094
	e.learnEndpoints(answerEndpoints(resp, buf[:0]))
	if got := e.learned[1]; got != "[::1]:9094" {
		t.Errorf("learned %q for node 1 after it moved, want [::1]:9094", got)
	}
}

// configWriter returns a client write of one 256-byte config record to
// n, the leader.
func configWriter(t *testing.T, n *Controller) func() {
	value := strings.Repeat("v", 256)
	return func() {
		r := metadata.NewConfigRecord()
		r.ResourceType, r.Name, r.Value = metadata.ConfigResourceBroker, "key", &value
		if _, err := n.SubmitChange(t.Context(), []metadata.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteAllocations bounds the heap objects of one client write on a
// one-node quorum, from SubmitChange to its answer: the record, the
// submission, its batch, the log append, the speculative and the
// applied image, the published quorum state. The speculative image
// reuses one Delta from write to write (Delta.Reset).
func TestWriteAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c := newTestCluster(t, 1)
	n := c.node(c.leader())
	submit(t, n, metadataVersionRecord())
	write := configWriter(t, n)
	write()
	var spec *metadata.Delta
	onEngine(t, n, func(e *engine) { spec = e.sub.specDelta })
	a := testing.AllocsPerRun(200, write)
	onEngine(t, n, func(e *engine) {
		if e.sub.specDelta != spec {
			t.Error("the speculative image's Delta was replaced, want it reset")
		}
	})
	t.Logf("%v heap objects per write", a)
	if a > 30 {
		t.Errorf("a write costs %v heap objects, want at most 30 (43 before the changes it locks in)", a)
	}
}
