package snapshot

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

func TestFileNames(t *testing.T) {
	id := kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}
	for _, c := range []struct{ got, want string }{
		{FileName(id), "00000000000000012666-0000000003.checkpoint"},
		{PartFileName(id, 42), "00000000000000012666-0000000003-42.checkpoint.part"},
		{DeletedFileName(id), "00000000000000012666-0000000003.checkpoint.deleted"},
		{FileName(Bootstrap), "00000000000000000000-0000000000.checkpoint"},
		{FileName(kraft.OffsetAndEpoch{Offset: math.MaxInt64, Epoch: math.MaxInt32}), "09223372036854775807-2147483647.checkpoint"},
		{PartFileName(id, math.MaxUint64), "00000000000000012666-0000000003-18446744073709551615.checkpoint.part"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestFileNamePanicsOnNegativeID(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FileName of a negative offset did not panic")
		}
	}()
	FileName(kraft.OffsetAndEpoch{Offset: -1})
}

func TestParseFileName(t *testing.T) {
	valid := []struct {
		name string
		id   kraft.OffsetAndEpoch
		kind Kind
	}{
		{"00000000000000012666-0000000003.checkpoint", kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}, KindSnapshot},
		{"00000000000000000000-0000000000.checkpoint", kraft.OffsetAndEpoch{}, KindSnapshot},
		{"00000000000000012666-0000000003-42.checkpoint.part", kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}, KindPart},
		// Kafka's Files.createTempFile unique part.
		{"00000000000000012666-0000000003-6911467834416254862.checkpoint.part", kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}, KindPart},
		{"00000000000000012666-0000000003.checkpoint.deleted", kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}, KindDeleted},
		{"09223372036854775807-2147483647.checkpoint", kraft.OffsetAndEpoch{Offset: math.MaxInt64, Epoch: math.MaxInt32}, KindSnapshot},
	}
	for _, c := range valid {
		id, kind, err := ParseFileName(c.name)
		if err != nil || id != c.id || kind != c.kind {
			t.Errorf("ParseFileName(%q) = %v, %v, %v; want %v, %v, nil", c.name, id, kind, err, c.id, c.kind)
		}
	}
	for _, round := range []kraft.OffsetAndEpoch{{Offset: 0, Epoch: 0}, {Offset: 1, Epoch: 1}, {Offset: 28869, Epoch: 189}, {Offset: math.MaxInt64, Epoch: math.MaxInt32}} {
		for _, name := range []string{FileName(round), PartFileName(round, 9), DeletedFileName(round)} {
			if id, _, err := ParseFileName(name); err != nil || id != round {
				t.Errorf("ParseFileName(%q) = %v, %v; want %v", name, id, err, round)
			}
		}
	}
	notSnapshot := []string{"00000000000000000000.log", "quorum-state", "leader-epoch-checkpoint", "partition.metadata", "00000000000000012345.snapshot", ""}
	for _, name := range notSnapshot {
		if _, _, err := ParseFileName(name); !errors.Is(err, ErrNotSnapshotName) {
			t.Errorf("ParseFileName(%q) error = %v, want ErrNotSnapshotName", name, err)
		}
	}
	invalid := []string{
		".checkpoint",
		"12666-3.checkpoint", // not padded
		"0000000000000012666-0000000003.checkpoint",        // 19 digits
		"000000000000000012666-0000000003.checkpoint",      // 21 digits
		"00000000000000012666-000000003.checkpoint",        // 9-digit epoch
		"00000000000000012666-00000000003.checkpoint",      // 11-digit epoch
		"00000000000000012666_0000000003.checkpoint",       // separator
		"+0000000000000012666-0000000003.checkpoint",       // sign
		"0000000000000001266x-0000000003.checkpoint",       // letter
		"99999999999999999999-0000000003.checkpoint",       // offset overflows int64
		"00000000000000012666-9999999999.checkpoint",       // epoch overflows int32
		"00000000000000012666-0000000003-.checkpoint.part", // empty unique
		"00000000000000012666-0000000003.checkpoint.part",  // no unique
		"00000000000000012666-0000000003-a.b.checkpoint.part",
		"00000000000000012666-0000000003-7.checkpoint", // unique on a final name
		"00000000000000012666-0000000003-7.checkpoint.deleted",
		"00000000000000012666-0000000003.checkpoint.checkpoint",
		"bootstrap.checkpoint", // not a snapshot id name; Open handles it by name
	}
	for _, name := range invalid {
		_, _, err := ParseFileName(name)
		var ne *NameError
		if !errors.As(err, &ne) || ne.Name != name {
			t.Errorf("ParseFileName(%q) error = %v, want *NameError", name, err)
		}
	}
}

func TestCompare(t *testing.T) {
	ids := []kraft.OffsetAndEpoch{{Offset: 10, Epoch: 2}, {Offset: 5, Epoch: 9}, {Offset: 10, Epoch: 1}, {Offset: 0, Epoch: 0}}
	slices.SortFunc(ids, Compare)
	want := []kraft.OffsetAndEpoch{{Offset: 0, Epoch: 0}, {Offset: 5, Epoch: 9}, {Offset: 10, Epoch: 1}, {Offset: 10, Epoch: 2}}
	if !slices.Equal(ids, want) {
		t.Errorf("sorted = %v, want %v", ids, want)
	}
	if got := idString(kraft.OffsetAndEpoch{Offset: 12666, Epoch: 3}); got != "12666-3" {
		t.Errorf("idString = %q", got)
	}
}

// TestListAndRecover checks the start-up cleanup Kafka's KafkaRaftLog does
// and D15 in docs/reliability.md: .part and .deleted files go, snapshots stay
// sorted, unrelated files are not touched, malformed names are reported.
func TestListAndRecover(t *testing.T) {
	m := vfs.NewMem()
	dir := "/logs/__cluster_metadata-0"
	files := map[string][]byte{
		"00000000000000000000.log":                           {1},
		"quorum-state":                                       {1},
		"leader-epoch-checkpoint":                            {1},
		"00000000000000000200-0000000002.checkpoint":         make([]byte, 20),
		"00000000000000000100-0000000001.checkpoint":         make([]byte, 10),
		"00000000000000000100-0000000002.checkpoint":         make([]byte, 11),
		"00000000000000000300-0000000002-5.checkpoint.part":  {1},
		"00000000000000000050-0000000001.checkpoint.deleted": {1},
		"123-4.checkpoint":                                   {1},
	}
	for name, data := range files {
		writeFile(t, m, dir+"/"+name, data)
	}
	if err := m.MkdirAll(dir+"/sub.checkpoint", 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := List(m, dir)
	if err != nil {
		t.Fatal(err)
	}
	wantSnaps := []Info{{kraft.OffsetAndEpoch{Offset: 100, Epoch: 1}, 10}, {kraft.OffsetAndEpoch{Offset: 100, Epoch: 2}, 11}, {kraft.OffsetAndEpoch{Offset: 200, Epoch: 2}, 20}}
	if !slices.Equal(l.Snapshots, wantSnaps) || !slices.Equal(l.Parts, []string{"00000000000000000300-0000000002-5.checkpoint.part"}) ||
		!slices.Equal(l.Deleted, []string{"00000000000000000050-0000000001.checkpoint.deleted"}) || !slices.Equal(l.Invalid, []string{"123-4.checkpoint"}) {
		t.Fatalf("List = %+v", l)
	}
	l, err = Recover(m, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Parts) != 0 || len(l.Deleted) != 0 || len(l.Snapshots) != 3 {
		t.Fatalf("Recover = %+v", l)
	}
	// The removals are durable: a crash now changes nothing.
	m.Crash(nil, vfs.CrashDropUnsynced)
	entries, err := m.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{
		"00000000000000000000.log",
		"00000000000000000100-0000000001.checkpoint",
		"00000000000000000100-0000000002.checkpoint",
		"00000000000000000200-0000000002.checkpoint",
		"123-4.checkpoint",
		"leader-epoch-checkpoint",
		"quorum-state",
		"sub.checkpoint",
	}
	if !slices.Equal(names, want) {
		t.Errorf("after Recover and crash: %v\nwant %v", names, want)
	}
	if _, err := List(m, "/missing"); err == nil {
		t.Error("List of a missing directory succeeded")
	}
}

func TestMarkAndRemoveDeleted(t *testing.T) {
	m := vfs.NewMem()
	dir := "/d"
	id := kraft.OffsetAndEpoch{Offset: 100, Epoch: 1}
	writeFile(t, m, dir+"/"+FileName(id), []byte{1})
	if err := MarkDeleted(m, dir, id); err != nil {
		t.Fatal(err)
	}
	m.Crash(nil, vfs.CrashDropUnsynced) // the rename was synced
	l, err := List(m, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Snapshots) != 0 || !slices.Equal(l.Deleted, []string{DeletedFileName(id)}) {
		t.Fatalf("after MarkDeleted: %+v", l)
	}
	if err := MarkDeleted(m, dir, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkDeleted of a missing snapshot: %v, want ErrNotFound", err)
	}
	for range 2 { // the second removal finds nothing and is fine
		if err := RemoveDeleted(m, dir, id); err != nil {
			t.Fatal(err)
		}
	}
	if l, _ := List(m, dir); len(l.Deleted) != 0 {
		t.Errorf("after RemoveDeleted: %+v", l)
	}
	if err := MarkDeleted(m, dir, kraft.OffsetAndEpoch{Offset: -1, Epoch: 0}); err == nil {
		t.Error("MarkDeleted accepted a negative id")
	}
}
