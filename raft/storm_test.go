package raft

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The heap the test allows one connection, server and client side
// together. The listener keeps a 16 KiB read buffer and two goroutines per
// connection, and grows a frame's buffer only as its bytes arrive, to at
// most the larger of 64 KiB and twice the bytes received
// (docs/security.md). An idle connection is allowed 64 KiB, one trickling
// a frame 128 KiB: room for the runtime's own growth and the race
// detector, while a buffer sized from a size prefix (1 MiB a connection
// here) fails at once.
const (
	idleConnBudget      = 64 << 10
	tricklingConnBudget = 128 << 10
)

// heapInUse returns the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// servedWhile checks that a normal client is answered while the listener
// holds what the test piled onto it.
func servedWhile(t *testing.T, h *hostileNode) {
	t.Helper()
	conn := dialRaw(t, h.c.Addr())
	resp := conn.call(1, describeQuorumRequest()).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("a normal client's DescribeQuorum = %+v", resp)
	}
	_ = conn.nc.Close()
}

// TestConnectionStormAndSlowloris (W1, W2, W31): a listener with Kafka's
// defaults (no connection limits) holds a storm of 2,000 connections,
// each of which has been served, and 200 clients that trickle a frame a
// byte at a time; meanwhile a normal client is served, the heap grows by
// less than its budget a connection, the trickling clients are cut off
// by connections.max.idle.ms (which bounds how long one frame may take
// to arrive), and closing the storm frees every connection.
func TestConnectionStormAndSlowloris(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 connections")
	}
	t.Run("storm", func(t *testing.T) {
		const storm = 2000
		h := startHostileNode(t, nil)
		base := h.stats().Active
		before := heapInUse()
		conns := make([]*rawConn, 0, storm)
		for range storm {
			c := dialRaw(t, h.c.Addr())
			if _, err := apiVersionsOn(t, c.nc); err != nil {
				t.Fatalf("connection %d of the storm: %v", len(conns), err)
			}
			conns = append(conns, c)
		}
		waitFor(t, "the listener to hold the storm", func() bool { return h.stats().Active == base+storm })
		grown := int64(heapInUse()) - int64(before)
		t.Logf("%d connections: heap in use grew by %d KiB (%d bytes a connection)", storm, grown>>10, grown/storm)
		if grown > storm*idleConnBudget {
			t.Errorf("heap grew by %d bytes for %d connections, over %d a connection", grown, storm, idleConnBudget)
		}
		servedWhile(t, h)
		for _, c := range conns {
			_ = c.nc.Close()
		}
		waitFor(t, "the listener to free the storm's connections", func() bool { return h.stats().Active == base })
	})
	t.Run("slowloris", func(t *testing.T) {
		const slow = 200
		h := startHostileNode(t, func(cfg *Config) { cfg.ConnectionsMaxIdle = 500 * time.Millisecond })
		before := heapInUse()
		conns := make([]*rawConn, slow)
		for i := range conns {
			conns[i] = dialRaw(t, h.c.Addr())
			// A 1 MiB frame is announced; its bytes follow one at a time.
			conns[i].write(binary.BigEndian.AppendUint32(nil, 1<<20))
		}
		open := slow
		alive := make([]bool, slow)
		for i := range alive {
			alive[i] = true
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(rawDeadline)
		measured, served := false, false
		for open > 0 {
			select {
			case <-deadline:
				t.Fatalf("%d trickling connections still open; want each cut off by connections.max.idle.ms", open)
			case <-tick.C:
			}
			for i, c := range conns {
				if !alive[i] {
					continue
				}
				if _, err := c.nc.Write([]byte{0}); err != nil {
					alive[i] = false
					open--
				}
			}
			if !measured {
				measured = true
				grown := int64(heapInUse()) - int64(before)
				t.Logf("%d trickling connections: heap in use grew by %d KiB (%d bytes a connection)", slow, grown>>10, grown/slow)
				if grown > slow*tricklingConnBudget {
					t.Errorf("heap grew by %d bytes for %d trickling connections, over %d a connection", grown, slow, tricklingConnBudget)
				}
			}
			if !served {
				served = true
				servedWhile(t, h)
			}
		}
		waitFor(t, "every trickling connection to be counted as idle", func() bool { return h.stats().ClosedIdle >= slow })
	})
}
