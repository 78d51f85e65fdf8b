package metadata_test

import (
	"reflect"
	"testing"

	"github.com/krabka-go/krabka/metadata"
)

// TestRunDecoder checks that a RunDecoder decodes every record of a run
// as Decode does, into a record of its own, and that a run after Reset
// reuses the records of the run before.
func TestRunDecoder(t *testing.T) {
	var values [][]byte
	err := buildImage(t, 30, 4).AppendSnapshotRecords(func(v []byte) error {
		values = append(values, append([]byte(nil), v...))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var dec metadata.RunDecoder
	var first []metadata.Record
	for round := range 2 {
		dec.Reset()
		seen := map[metadata.Record]bool{}
		for i, v := range values {
			got, err := dec.Decode(v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := metadata.Decode(v)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, record %d: decoded %+v, want %+v", round, i, got, want)
			}
			if seen[got] {
				t.Fatalf("round %d, record %d: a record handed out twice in one run", round, i)
			}
			seen[got] = true
			if round == 0 {
				first = append(first, got)
			} else if got != first[i] {
				t.Fatalf("record %d: the run after Reset did not reuse the record of the run before", i)
			}
		}
		// Every record of the run is still what it decoded.
		for i, v := range values {
			want, _ := metadata.Decode(v)
			if !reflect.DeepEqual(first[i], want) {
				t.Fatalf("round %d: record %d changed by a later Decode of the run", round, i)
			}
		}
	}
	if _, err := dec.Decode([]byte{1, 0x7f, 0}); err == nil {
		t.Fatal("an unknown record type decoded")
	}
}
