package control_test

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/krabka-go/krabka/internal/control"
)

// FuzzControlRecord feeds arbitrary keys and values to Decode. It must
// never panic, must allocate in proportion to the input, must classify
// keys exactly as ParseKey does, and every record that decodes must
// encode back to the same value (and the canonical 4-byte key). The seed
// corpus in testdata/fuzz/FuzzControlRecord holds real control records
// from Kafka's sample logs and snapshots.
func FuzzControlRecord(f *testing.F) {
	f.Add([]byte{0, 0, 0, 5}, []byte{0, 0, 0, 1, 0})
	f.Add([]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0}, []byte{})
	f.Add([]byte{0, 1, 0, 4, 9}, []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		msg, err := control.Decode(key, value)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64*uint64(len(key)+len(value))+16<<10 {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(key)+len(value), grew)
		}
		typ, kerr := control.ParseKey(key)
		if kerr != nil {
			if !errors.Is(err, control.ErrInvalidKey) {
				t.Fatalf("ParseKey failed (%v) but Decode returned %v", kerr, err)
			}
			return
		}
		if err != nil {
			return
		}
		if msg.ControlType() != typ {
			t.Fatalf("Decode returned a %s for a key of type %s", msg.ControlType(), typ)
		}
		k, v, err := control.Encode(msg)
		if err != nil {
			t.Fatalf("Decode succeeded but Encode failed: %v", err)
		}
		if !bytes.Equal(v, value) || !bytes.Equal(k, control.AppendKey(nil, typ)) {
			t.Fatalf("re-encoding differs: key %x value %x, want value %x", k, v, value)
		}
	})
}
