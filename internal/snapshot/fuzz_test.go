package snapshot

import (
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// fuzzName is the file name fuzz inputs are read under: epoch 5.
var fuzzName = FileName(kraft.OffsetAndEpoch{Offset: 42, Epoch: 5})

// FuzzSnapshotRead reads arbitrary bytes as a snapshot file. It must
// never panic, never allocate more than the file and the configured
// limits allow (the limits below are small, so an over-allocation shows
// as a crash of the fuzzer's memory limit), and when Open accepts a file,
// iterating it must succeed and yield as many records as Open counted,
// and its header must be writable again. The committed corpus in
// testdata/fuzz/FuzzSnapshotRead runs with plain go test.
func FuzzSnapshotRead(f *testing.F) {
	m := vfs.NewMem()
	for i, h := range []Header{
		{LastContainedLogTimestamp: 9},
		{LastContainedLogTimestamp: 9, KRaftVersion: 1, Voters: testVoters()},
	} {
		dir := "/seed" + string(rune('a'+i))
		f.Add(writeSnapshot(f, m, dir, kraft.OffsetAndEpoch{Offset: 42, Epoch: 5}, h, testValues(5), 2, WriterOptions{MaxBatchRecords: 3}))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := vfs.NewMem()
		writeFile(t, m, "/d/"+fuzzName, data)
		r, err := Open(m, "/d/"+fuzzName, ReadOptions{MaxBatchBytes: 1 << 16, MaxDecompressedSize: 1 << 20})
		if err != nil {
			return
		}
		defer r.Close()
		var n int64
		for r.Next() {
			n += int64(len(r.Batch().Records))
		}
		if r.Err() != nil {
			t.Fatalf("Next after a successful Open: %v", r.Err())
		}
		if n != r.Records() {
			t.Fatalf("iterated %d records, Open counted %d", n, r.Records())
		}
		if r.Size() != int64(len(data)) {
			t.Fatalf("Size() = %d for %d bytes", r.Size(), len(data))
		}
		if _, err := headerRecords(r.Header()); err != nil {
			t.Fatalf("header read from the file cannot be written: %v", err)
		}
	})
}

// FuzzParseFileName checks that every name ParseFileName accepts is the
// one the format functions produce for its ID: parsing is strict, with no
// second spelling of an ID.
func FuzzParseFileName(f *testing.F) {
	for _, s := range []string{
		"00000000000000012666-0000000003.checkpoint",
		"00000000000000012666-0000000003-42.checkpoint.part",
		"00000000000000012666-0000000003.checkpoint.deleted",
		"09223372036854775807-2147483647.checkpoint",
		"1-1.checkpoint",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, kind, err := ParseFileName(name)
		if err != nil {
			return
		}
		var want string
		switch kind {
		case KindSnapshot:
			want = FileName(id)
		case KindDeleted:
			want = DeletedFileName(id)
		case KindPart:
			want = namePrefix(id) + name[idWidth:]
		default:
			t.Fatalf("kind %v", kind)
		}
		if name != want {
			t.Fatalf("ParseFileName(%q) = %v, %v, which formats as %q", name, id, kind, want)
		}
	})
}
