package metadata

import (
	"encoding/binary"
	"slices"
)

// Partition is the state of a partition (Kafka's PartitionRegistration).
// It is immutable, and so are the lists its methods return: they share
// the partition's memory and must not be modified. Empty lists are nil.
//
// A large cluster holds a million of these, so a partition keeps its
// lists in one allocation: the six id lists one after another, then the
// replicas' directories. See docs/performance.md, "Image memory".
type Partition struct {
	// slab holds Replicas, ISR, RemovingReplicas, AddingReplicas, ELR and
	// LastKnownELR, in that order, ends[i] being the end of list i; then,
	// unless dirsMigrating, each replica's directory as four int32s. An
	// ISR equal to the replicas is not stored twice (isrIsReplicas).
	slab []int32
	ends [numLists]uint32
	// Leader is the leader broker, or NoLeader.
	Leader int32
	// LeaderEpoch increases with every leader change.
	LeaderEpoch int32
	// PartitionEpoch increases with every change of the partition.
	PartitionEpoch int32
	// LeaderRecoveryState is LeaderRecovered or LeaderRecovering.
	LeaderRecoveryState int8
	isrIsReplicas       bool
	// dirsMigrating: every replica's directory is DirectoryMigrating
	// (a partition created without directories); none is stored.
	dirsMigrating bool
}

// The id lists of a partition, in slab order.
const (
	listReplicas = iota
	listISR
	listRemoving
	listAdding
	listELR
	listLastKnownELR
	numLists
)

// dirWords is the number of int32s a directory id takes in the slab.
const dirWords = 4

// list returns id list i, nil when empty.
func (p *Partition) list(i int) []int32 {
	start := uint32(0)
	if i > 0 {
		start = p.ends[i-1]
	}
	if p.ends[i] == start {
		return nil
	}
	return p.slab[start:p.ends[i]:p.ends[i]]
}

// Replicas are the assigned replicas, preferred leader first.
func (p *Partition) Replicas() []int32 { return p.list(listReplicas) }

// ISR is the in-sync replica set.
func (p *Partition) ISR() []int32 {
	if p.isrIsReplicas {
		return p.Replicas()
	}
	return p.list(listISR)
}

// RemovingReplicas are replicas being removed by a reassignment.
func (p *Partition) RemovingReplicas() []int32 { return p.list(listRemoving) }

// AddingReplicas are replicas being added by a reassignment.
func (p *Partition) AddingReplicas() []int32 { return p.list(listAdding) }

// ELR are the eligible leader replicas (KIP-966).
func (p *Partition) ELR() []int32 { return p.list(listELR) }

// LastKnownELR are the last known eligible leader replicas.
func (p *Partition) LastKnownELR() []int32 { return p.list(listLastKnownELR) }

// Directory returns the log directory of replica i, in the order of
// Replicas: DirectoryMigrating() for a partition created without
// directories.
func (p *Partition) Directory(i int) [16]byte {
	if p.dirsMigrating {
		if i < 0 || i >= int(p.ends[listReplicas]) {
			panic("metadata: Partition.Directory: replica index out of range")
		}
		return DirectoryMigrating()
	}
	w := p.slab[p.ends[numLists-1]+uint32(i)*dirWords:][:dirWords]
	var d [16]byte
	for k, v := range w {
		binary.LittleEndian.PutUint32(d[4*k:], uint32(v))
	}
	return d
}

// Directories returns the log directory of each replica, in the order of
// Replicas, in a new slice (nil without replicas).
func (p *Partition) Directories() [][16]byte { return p.AppendDirectories(nil) }

// AppendDirectories appends the directory of each replica, in the order
// of Replicas, to dst and returns it.
func (p *Partition) AppendDirectories(dst [][16]byte) [][16]byte {
	for i := range int(p.ends[listReplicas]) {
		dst = append(dst, p.Directory(i))
	}
	return dst
}

// partitionSpec is a partition unpacked, as replay builds and checks it
// before packing it into a Partition. Its lists may alias a record or
// another partition: packing copies them.
type partitionSpec struct {
	replicas, isr, removing, adding, elr, lastKnownELR []int32
	// dirs are the replicas' directories; nil while dirsFrom holds them.
	dirs [][16]byte
	// dirsFrom is the partition whose directories the spec keeps
	// unchanged (nil: dirs holds them).
	dirsFrom            *Partition
	leader              int32
	leaderEpoch         int32
	partitionEpoch      int32
	leaderRecoveryState int8
}

// spec unpacks p, keeping its directories by reference.
func (p *Partition) spec() partitionSpec {
	return partitionSpec{
		replicas: p.Replicas(), isr: p.ISR(), removing: p.RemovingReplicas(), adding: p.AddingReplicas(),
		elr: p.ELR(), lastKnownELR: p.LastKnownELR(), dirsFrom: p,
		leader: p.Leader, leaderEpoch: p.LeaderEpoch, partitionEpoch: p.PartitionEpoch, leaderRecoveryState: p.LeaderRecoveryState,
	}
}

// numDirs is the number of directories the spec holds.
func (s *partitionSpec) numDirs() int {
	if s.dirsFrom != nil {
		return int(s.dirsFrom.ends[listReplicas])
	}
	return len(s.dirs)
}

// allMigrating reports whether every directory of the spec is
// DirectoryMigrating (true for none).
func (s *partitionSpec) allMigrating() bool {
	if s.dirsFrom != nil {
		if s.dirsFrom.dirsMigrating {
			return true
		}
		for i := range int(s.dirsFrom.ends[listReplicas]) {
			if s.dirsFrom.Directory(i) != DirectoryMigrating() {
				return false
			}
		}
		return true
	}
	return !slices.ContainsFunc(s.dirs, func(d [16]byte) bool { return d != DirectoryMigrating() })
}

// pack copies s into a new Partition. The directories must number the
// replicas, or be all DirectoryMigrating (none included).
func (s *partitionSpec) pack() *Partition { return s.packIn(nil) }

// packIn is pack with the partition and its slab taken from a, or
// allocated on their own when a is nil.
func (s *partitionSpec) packIn(a *partitionArena) *Partition {
	p := a.partition()
	*p = Partition{
		Leader: s.leader, LeaderEpoch: s.leaderEpoch, PartitionEpoch: s.partitionEpoch,
		LeaderRecoveryState: s.leaderRecoveryState,
		isrIsReplicas:       len(s.isr) > 0 && slices.Equal(s.isr, s.replicas),
		dirsMigrating:       s.allMigrating(),
	}
	lists := [numLists][]int32{s.replicas, s.isr, s.removing, s.adding, s.elr, s.lastKnownELR}
	if p.isrIsReplicas {
		lists[listISR] = nil
	}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if !p.dirsMigrating {
		n += dirWords * len(s.replicas)
	}
	p.slab = a.slab(n)
	for i, l := range lists {
		p.slab = append(p.slab, l...)
		p.ends[i] = uint32(len(p.slab))
	}
	if !p.dirsMigrating {
		if s.dirsFrom != nil {
			from := s.dirsFrom
			p.slab = append(p.slab, from.slab[from.ends[numLists-1]:]...)
		} else {
			for _, d := range s.dirs {
				for k := range dirWords {
					p.slab = append(p.slab, int32(binary.LittleEndian.Uint32(d[4*k:])))
				}
			}
		}
	}
	return p
}

// partitionArena hands out the partitions a snapshot load creates, their
// slabs and their nodes in their topic's map from blocks, so that a million partitions cost a few
// thousand allocations instead of two million. A block stays in memory
// while an image holds any partition of it: a partition changed later is
// packed on its own, so at most the blocks of the partitions loaded stay
// behind them. The zero partitionArena is ready to use; a nil one
// allocates every partition and slab on its own.
type partitionArena struct {
	parts []Partition
	words []int32
	nodes []pnode[int32, *Partition] // the partitions' nodes in their topic's map
}

// Block sizes of partitionArena. A block that holds pointers carries an
// 8-byte header of the runtime's allocator, so 255 partitions (64 bytes
// each) and 255 map nodes (48 bytes) fill the size classes of 16 KiB and
// 12 KiB, where 256 would take the next ones, an eighth larger; 4,096
// words are 16 KiB.
const (
	arenaParts = 255
	arenaWords = 4096
)

// partition returns a zero Partition.
func (a *partitionArena) partition() *Partition {
	if a == nil {
		return new(Partition)
	}
	if len(a.parts) == 0 {
		a.parts = make([]Partition, arenaParts)
	}
	p := &a.parts[0]
	a.parts = a.parts[1:]
	return p
}

// node returns a zero node of a topic's partition map, nil when a is nil
// (the map then allocates it).
func (a *partitionArena) node() *pnode[int32, *Partition] {
	if a == nil {
		return nil
	}
	if len(a.nodes) == 0 {
		a.nodes = make([]pnode[int32, *Partition], arenaParts)
	}
	n := &a.nodes[0]
	a.nodes = a.nodes[1:]
	return n
}

// slab returns an empty slab of capacity n, which no other slab shares.
func (a *partitionArena) slab(n int) []int32 {
	if a == nil || n > arenaWords/8 {
		return make([]int32, 0, n)
	}
	if n > len(a.words) {
		a.words = make([]int32, arenaWords)
	}
	s := a.words[:0:n]
	a.words = a.words[n:]
	return s
}
