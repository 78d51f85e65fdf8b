package raft

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// BenchmarkObservers measures a 3-node loopback quorum whose leader is
// long-polled by 0, 10, 100 and 1,000 observers, as a Kafka cluster's
// brokers poll its active controller (Fetch v17 with their replica id and
// directory id, 500 ms MaxWait, each on a connection of its own), while 16 writers commit one TopicRecord
// each at a time. It reports the writers' commit latency (p50, p99), the
// time from a write's acknowledgement until every observer holds it and
// knows it committed (p99 over sampled writes and observers; 0 when an
// observer saw it before the writer's answer), and the process's CPU per
// write (all three nodes and the observers run in this process), and
// how many Fetch answers an observer gets per write. Each
// sub-benchmark runs b.N writes.
//
//	go test ./raft -run '^$' -bench BenchmarkObservers -benchtime 2000x
func BenchmarkObservers(b *testing.B) {
	for _, n := range []int{0, 10, 100, 1000} {
		b.Run(fmt.Sprint("observers=", n), func(b *testing.B) { benchObservers(b, n) })
	}
}

func benchObservers(b *testing.B, observers int) {
	c := newTestCluster(b, 3)
	leaderID := c.leader()
	leader := c.node(leaderID)
	submit(b, leader, metadataVersionRecord())
	addr := leader.Addr().String()
	clusterID := leader.eng.clusterID
	seen := &seenLog{}
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	for i := range observers {
		ready.Add(1)
		wg.Go(func() { observe(ctx, addr, clusterID, int32(1000+i), seen, &ready) })
	}
	ready.Wait()
	answers0 := seen.answers.Load()

	const writers = 16
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	b.ResetTimer()
	var wwg sync.WaitGroup
	for w := range writers {
		wwg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				start := time.Now()
				res, err := leader.SubmitChange(ctx, []metadata.Record{topicRecord("obs-" + strconv.FormatInt(i, 10))})
				if err != nil {
					b.Error(err)
					return
				}
				now := time.Now()
				lat[w] = append(lat[w], now.Sub(start))
				if i%16 == 0 || i == int64(b.N) {
					seen.ack(res.LastOffset, now)
				}
			}
		})
	}
	wwg.Wait()
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	answers := seen.answers.Load() - answers0
	last := seen.lastSampled()
	deadline := time.Now().Add(30 * time.Second)
	for observers > 0 && seen.caughtUp() < observers && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(ms(quantile(all, 0.50)), "commit-p50-ms")
	b.ReportMetric(ms(quantile(all, 0.99)), "commit-p99-ms")
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(max(b.N, 1))
	b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/write")
	if observers > 0 {
		obs := seen.latencies()
		slices.Sort(obs)
		b.ReportMetric(ms(quantile(obs, 0.99)), "observe-p99-ms")
		b.ReportMetric(float64(answers)/float64(observers)/float64(b.N), "answers/observer/write")
		if got := seen.caughtUp(); got < observers {
			b.Errorf("%d of %d observers reached offset %d", got, observers, last)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// seenLog holds the acknowledgement times of sampled writes and how long
// after them each observer held the write and knew it committed.
type seenLog struct {
	mu      sync.Mutex
	offsets []int64 // ascending
	acked   []time.Time
	lat     []time.Duration
	// done counts observers that reached the last sampled offset.
	done map[int32]bool
	// answers counts the Fetch answers the observers got after their
	// first.
	answers atomic.Int64
}

func (s *seenLog) ack(offset int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.offsets, offset)
	s.offsets = slices.Insert(s.offsets, i, offset)
	s.acked = slices.Insert(s.acked, i, at)
}

func (s *seenLog) lastSampled() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.offsets) == 0 {
		return -1
	}
	return s.offsets[len(s.offsets)-1]
}

// observed records that observer id knows offsets below committed are
// committed and held, having known it for those below from before.
func (s *seenLog) observed(id int32, from, committed int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.offsets, from)
	for ; i < len(s.offsets) && s.offsets[i] < committed; i++ {
		s.lat = append(s.lat, max(0, at.Sub(s.acked[i])))
	}
	if n := len(s.offsets); n > 0 && s.offsets[n-1] < committed {
		if s.done == nil {
			s.done = map[int32]bool{}
		}
		s.done[id] = true
	}
}

func (s *seenLog) caughtUp() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.done)
}

func (s *seenLog) latencies() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lat)
}

// observe long-polls the metadata log as observer id until ctx ends,
// reporting to seen what it holds committed after each answer. It is a
// lean client of its own (one connection, one request at a time, kmsg's
// encoding and decoding and nothing else) so that the observers' side
// costs the process little beside the quorum's.
func observe(ctx context.Context, addr, clusterID string, id int32, seen *seenLog, ready *sync.WaitGroup) {
	// ready learns of the first answer, or of the end without one.
	signaled := false
	signal := func() {
		if !signaled {
			signaled = true
			ready.Done()
		}
	}
	defer signal()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("observer"))
	var dir [16]byte
	binary.BigEndian.PutUint32(dir[12:], uint32(id))
	req := kmsg.NewPtrFetchRequest()
	req.Version = 17
	req.ClusterID = &clusterID
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, id, -1
	req.MaxWaitMillis, req.MaxBytes, req.MinBytes = 500, 1<<20, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = wire.MetadataTopicID
	ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	fp := &req.Topics[0].Partitions[0]
	fp.PartitionMaxBytes, fp.ReplicaDirectoryID = 1<<20, dir
	// An empty log's position; the leader's epoch comes with the first
	// answer (CurrentLeader).
	fp.LastFetchedEpoch, fp.CurrentLeaderEpoch = 0, 0
	var out, in []byte
	known := int64(0)
	for corr := int32(1); ctx.Err() == nil; corr++ {
		out = format.AppendRequest(out[:0], req, corr)
		if _, err := conn.Write(out); err != nil {
			return
		}
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		in = slices.Grow(in[:0], int(binary.BigEndian.Uint32(size[:])))[:binary.BigEndian.Uint32(size[:])]
		if _, err := io.ReadFull(conn, in); err != nil {
			return
		}
		if corr == 1 {
			signal()
		} else {
			seen.answers.Add(1)
		}
		// The response header: the correlation id, then (flexible
		// versions) an empty tag section.
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 17
		if len(in) < 5 || resp.ReadFrom(in[5:]) != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			continue
		}
		p := resp.Topics[0].Partitions[0]
		if p.CurrentLeader.LeaderEpoch > fp.CurrentLeaderEpoch {
			fp.CurrentLeaderEpoch = p.CurrentLeader.LeaderEpoch
		}
		if p.ErrorCode != 0 || p.DivergingEpoch.Epoch >= 0 {
			continue
		}
		fp.FetchOffset, fp.LastFetchedEpoch = advanceBatches(p.RecordBatches, fp.FetchOffset, fp.LastFetchedEpoch)
		if committed := min(p.HighWatermark, fp.FetchOffset); committed > known {
			seen.observed(id, known, committed, time.Now())
			known = committed
		}
	}
}

// advanceBatches returns the offset after the last whole batch of raw and
// that batch's epoch (offset and epoch when raw has none).
func advanceBatches(raw []byte, offset int64, epoch int32) (int64, int32) {
	for len(raw) >= 61 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size > len(raw) || size < 61 {
			break
		}
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		epoch = int32(binary.BigEndian.Uint32(raw[12:16]))
		offset = base + int64(int32(binary.BigEndian.Uint32(raw[23:27]))) + 1
		raw = raw[size:]
	}
	return offset, epoch
}
