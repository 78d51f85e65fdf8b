package metadata

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// A packed partition answers each list and directory as it was given,
// shares nothing a caller could overwrite through append, and stores an
// ISR equal to the replicas, or directories all DirectoryMigrating, once
// or not at all.
func TestPartitionPacksItsLists(t *testing.T) {
	d1, d2, d3 := [16]byte{1}, [16]byte{2, 15: 0xff}, [16]byte{0xfe, 7: 0x80, 15: 3}
	mig := DirectoryMigrating()
	for _, c := range []struct {
		name string
		spec partitionSpec
		dirs [][16]byte // the directories read back
		slab int        // the int32s stored
	}{
		{"isr shared, directories", partitionSpec{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, dirs: [][16]byte{d1, d2, d3}, leader: 1},
			[][16]byte{d1, d2, d3}, 3 + 3*dirWords},
		{"migrating", partitionSpec{replicas: []int32{4, 5}, isr: []int32{5}, dirs: [][16]byte{mig, mig}, leader: 5},
			[][16]byte{mig, mig}, 3},
		{"no directories", partitionSpec{replicas: []int32{4, 5}, isr: []int32{4, 5}, leader: 4},
			[][16]byte{mig, mig}, 2},
		{"every list", partitionSpec{replicas: []int32{1, 2, 3, 4}, isr: []int32{2}, removing: []int32{3}, adding: []int32{4},
			elr: []int32{1}, lastKnownELR: []int32{3}, dirs: [][16]byte{d1, d2, mig, d3}, leader: 2, leaderEpoch: 7, partitionEpoch: 9, leaderRecoveryState: LeaderRecovering},
			[][16]byte{d1, d2, mig, d3}, 9 + 4*dirWords},
	} {
		p := c.spec.pack()
		for _, l := range []struct {
			name      string
			got, want []int32
		}{
			{"replicas", p.Replicas(), c.spec.replicas}, {"isr", p.ISR(), c.spec.isr},
			{"removing", p.RemovingReplicas(), c.spec.removing}, {"adding", p.AddingReplicas(), c.spec.adding},
			{"elr", p.ELR(), c.spec.elr}, {"last known elr", p.LastKnownELR(), c.spec.lastKnownELR},
		} {
			if !slices.Equal(l.got, l.want) || (l.want == nil) != (l.got == nil) {
				t.Errorf("%s: %s = %v, want %v", c.name, l.name, l.got, l.want)
			}
		}
		if got := p.Directories(); !slices.Equal(got, c.dirs) {
			t.Errorf("%s: directories = %x, want %x", c.name, got, c.dirs)
		}
		if len(p.slab) != c.slab {
			t.Errorf("%s: %d int32s stored, want %d", c.name, len(p.slab), c.slab)
		}
		if p.Leader != c.spec.leader || p.LeaderEpoch != c.spec.leaderEpoch || p.PartitionEpoch != c.spec.partitionEpoch || p.LeaderRecoveryState != c.spec.leaderRecoveryState {
			t.Errorf("%s: scalars %+v", c.name, p)
		}
		// An append to a returned list makes a copy.
		before := slices.Clone(p.ISR())
		_ = append(p.Replicas(), 99)
		if !slices.Equal(p.ISR(), before) {
			t.Errorf("%s: appending to Replicas changed the ISR to %v", c.name, p.ISR())
		}
		// Unpacked and packed again, it is the same partition.
		s := p.spec()
		if q := s.pack(); !slices.Equal(q.slab, p.slab) || q.ends != p.ends || q.isrIsReplicas != p.isrIsReplicas || q.dirsMigrating != p.dirsMigrating {
			t.Errorf("%s: repacked %+v, want %+v", c.name, q, p)
		}
	}
}

// Publishing one partition change allocates the new partition and its
// lists, no more: two allocations.
func TestPartitionPackAllocations(t *testing.T) {
	p := (&partitionSpec{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, dirs: [][16]byte{{1}, {2}, {3}}, leader: 1}).pack()
	got := testing.AllocsPerRun(100, func() {
		s := p.spec()
		s.isr = []int32{1, 2}
		s.partitionEpoch++
		_ = s.pack()
	})
	if got > 2 {
		t.Errorf("a partition change allocates %.0f times, want at most 2", got)
	}
}

// TestPlainValidImpliesValid: a partition plainValid accepts passes
// every check of checkPartition, and checkPartition decides as its full
// checks do.
func TestPlainValidImpliesValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := func(label string, maxLen int) []int32 {
			return rapid.SliceOfN(rapid.Int32Range(-1, 4), 0, maxLen).Draw(t, label)
		}
		p := partitionSpec{
			replicas: ids("replicas", 5), isr: ids("isr", 5),
			leader: rapid.Int32Range(-2, 4).Draw(t, "leader"), leaderRecoveryState: rapid.Int8Range(-1, 2).Draw(t, "lrs"),
		}
		if rapid.Bool().Draw(t, "isrIsReplicas") {
			p.isr = p.replicas
		}
		if rapid.IntRange(0, 5).Draw(t, "extra") == 0 {
			p.removing, p.adding, p.elr, p.lastKnownELR = ids("removing", 2), ids("adding", 2), ids("elr", 2), ids("lastKnownELR", 2)
		}
		full := checkPartitionFully("t", 0, &p)
		if p.plainValid() && full != nil {
			t.Fatalf("plainValid accepts %+v, the full checks refuse it: %v", p, full)
		}
		if got := checkPartition("t", 0, &p); (got == nil) != (full == nil) || got != nil && got.Error() != full.Error() {
			t.Fatalf("checkPartition = %v, the full checks %v", got, full)
		}
	})
}
