package quorum

import (
	"fmt"
	"testing"
)

func dir(b byte) UUID { return UUID{b} }

func TestReplicaKeyMatches(t *testing.T) {
	tests := []struct {
		what       string
		stored, in ReplicaKey
		want       bool
	}{
		{"same id, no directories", ReplicaKey{ID: 1}, ReplicaKey{ID: 1}, true},
		{"stored without directory accepts any", ReplicaKey{ID: 1}, ReplicaKey{ID: 1, DirectoryID: dir(7)}, true},
		{"stored directory rejects missing one", ReplicaKey{ID: 1, DirectoryID: dir(7)}, ReplicaKey{ID: 1}, false},
		{"stored directory rejects other one", ReplicaKey{ID: 1, DirectoryID: dir(7)}, ReplicaKey{ID: 1, DirectoryID: dir(8)}, false},
		{"equal directories", ReplicaKey{ID: 1, DirectoryID: dir(7)}, ReplicaKey{ID: 1, DirectoryID: dir(7)}, true},
		{"different ids", ReplicaKey{ID: 1}, ReplicaKey{ID: 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			if got := tt.stored.Matches(tt.in); got != tt.want {
				t.Errorf("%v.Matches(%v) = %v, want %v", tt.stored, tt.in, got, tt.want)
			}
		})
	}
}

func TestMajority(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		if got := Majority(n); got != want {
			t.Errorf("Majority(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestNewVoterSet(t *testing.T) {
	s, err := NewVoterSet(ReplicaKey{ID: 3}, ReplicaKey{ID: 1}, ReplicaKey{ID: 2, DirectoryID: dir(1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "(1,2/AQAAAAAAAAAAAAAAAAAAAA,3)" {
		t.Errorf("String() = %q", got)
	}
	if !s.Contains(ReplicaKey{ID: 1, DirectoryID: dir(9)}) {
		t.Error("Contains(1/9) = false, want true: voter 1 has no directory id")
	}
	if s.Contains(ReplicaKey{ID: 2}) {
		t.Error("Contains(2) = true, want false: voter 2 has a directory id")
	}
	if _, err := NewVoterSet(ReplicaKey{ID: 1}, ReplicaKey{ID: 1, DirectoryID: dir(1)}); err == nil {
		t.Error("NewVoterSet with a duplicate id: no error")
	}
	if _, err := NewVoterSet(ReplicaKey{ID: -1}); err == nil {
		t.Error("NewVoterSet with a negative id: no error")
	}
}

func TestMajorityOffset(t *testing.T) {
	tests := []struct {
		offsets []Offset
		want    Offset
	}{
		{nil, -1},
		{[]Offset{5}, 5},
		{[]Offset{5, 3}, 3},
		{[]Offset{5, 3, 1}, 3},
		{[]Offset{1, 5, 3}, 3},
		{[]Offset{5, -1, -1}, -1},
		{[]Offset{5, 4, -1}, 4},
		{[]Offset{9, 8, 7, 6, 5}, 7},
		{[]Offset{9, 8, 7, 6}, 7},
	}
	for _, tt := range tests {
		if got := MajorityOffset(tt.offsets); got != tt.want {
			t.Errorf("MajorityOffset(%v) = %d, want %d", tt.offsets, got, tt.want)
		}
	}
}

func TestNextHighWatermark(t *testing.T) {
	tests := []struct {
		what                string
		current, epochStart Offset
		offsets             []Offset
		want                Offset
		changed             bool
	}{
		{"first commit past epoch start", -1, 10, []Offset{11, 11, 3}, 11, true},
		{"majority only reaches the epoch start (figure 8)", -1, 10, []Offset{11, 10, 10}, -1, false},
		{"majority below the epoch start", -1, 10, []Offset{11, 7, 7}, -1, false},
		{"advance", 11, 10, []Offset{15, 13, 12}, 13, true},
		{"never backwards", 13, 10, []Offset{15, 12, 12}, 13, false},
		{"equal is no change", 13, 10, []Offset{15, 13, 1}, 13, false},
		{"single voter", -1, 0, []Offset{1}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			got, changed := NextHighWatermark(tt.current, tt.epochStart, tt.offsets)
			if got != tt.want || changed != tt.changed {
				t.Errorf("NextHighWatermark(%d, %d, %v) = %d, %v, want %d, %v", tt.current, tt.epochStart, tt.offsets, got, changed, tt.want, tt.changed)
			}
		})
	}
}

func TestTally(t *testing.T) {
	tests := []struct {
		voters, granted, rejected int
		want                      ElectionResult
	}{
		{1, 1, 0, Won},
		{3, 1, 0, Pending},
		{3, 2, 0, Won},
		{3, 1, 1, Pending},
		{3, 1, 2, Lost},
		{4, 2, 1, Pending},
		{4, 2, 2, Lost},
		{5, 2, 2, Pending},
		{5, 3, 2, Won},
		{5, 1, 3, Lost},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d voters %d granted %d rejected", tt.voters, tt.granted, tt.rejected), func(t *testing.T) {
			if got := Tally(tt.voters, tt.granted, tt.rejected); got != tt.want {
				t.Errorf("Tally(%d, %d, %d) = %v, want %v", tt.voters, tt.granted, tt.rejected, got, tt.want)
			}
		})
	}
}

func TestParseUUID(t *testing.T) {
	want := UUID{15: 1}
	if got, err := ParseUUID(want.String()); err != nil || got != want {
		t.Errorf("ParseUUID(%q) = %v, %v; want %v", want.String(), got, err, want)
	}
	for _, s := range []string{"", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA+", "AAAAAAAAAAAAAAAAAAAAA="} {
		if _, err := ParseUUID(s); err == nil {
			t.Errorf("ParseUUID(%q) = nil error", s)
		}
	}
}
