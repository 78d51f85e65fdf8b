package metadata_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/codegen"
	"github.com/krabka-go/krabka/internal/codegen/codectest"
	"github.com/krabka-go/krabka/metadata"
)

// TestRoundTrip encodes random records of every type at every valid
// version, decodes them and requires the same value and the same bytes.
func TestRoundTrip(t *testing.T) {
	defs, err := codegen.ParseDir("definitions")
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != len(metadata.APIKeys()) {
		t.Fatalf("%d definitions but %d api keys", len(defs), len(metadata.APIKeys()))
	}
	for _, def := range defs {
		key := metadata.APIKey(def.APIKey)
		for v := def.Valid.Lo; v <= def.Valid.Hi; v++ {
			t.Run(fmt.Sprintf("%s/v%d", def.Name, v), func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					rec := metadata.NewRecord(key)
					codectest.Fill(rt, rec, def, v)
					rec.SetVersion(v)
					b, err := metadata.Encode(rec)
					if err != nil {
						rt.Fatalf("Encode: %v", err)
					}
					got, err := metadata.Decode(b)
					if err != nil {
						rt.Fatalf("Decode(%x): %v", b, err)
					}
					if diff := cmp.Diff(rec, got); diff != "" {
						rt.Fatalf("round trip mismatch (-sent +decoded):\n%s", diff)
					}
					again, err := metadata.Encode(got)
					if err != nil || !bytes.Equal(again, b) {
						rt.Fatalf("re-encode = %x, %v; want %x", again, err, b)
					}
				})
			})
		}
	}
}
