package control_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/codegen"
	"github.com/krabka-go/krabka/internal/codegen/codectest"
	"github.com/krabka-go/krabka/internal/control"
)

type codec interface {
	AppendTo(dst []byte, version int16) ([]byte, error)
	DecodeFrom(b []byte, version int16) error
	Default()
}

func newCodec(name string) codec {
	switch name {
	case "ControlRecordTypeSchema":
		return control.NewControlRecordTypeSchema()
	case "LeaderChangeMessage":
		return control.NewLeaderChangeMessage()
	case "SnapshotHeaderRecord":
		return control.NewSnapshotHeaderRecord()
	case "SnapshotFooterRecord":
		return control.NewSnapshotFooterRecord()
	case "KRaftVersionRecord":
		return control.NewKRaftVersionRecord()
	case "VotersRecord":
		return control.NewVotersRecord()
	}
	return nil
}

// TestRoundTrip encodes random values of every control message at every
// version of its schema, decodes them and requires the same value and
// bytes; at version 0 it also goes through Encode and Decode.
func TestRoundTrip(t *testing.T) {
	defs, err := codegen.ParseDir("definitions")
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range defs {
		for v := def.Valid.Lo; v <= def.Valid.Hi; v++ {
			t.Run(def.Name, func(t *testing.T) {
				if newCodec(def.Name) == nil {
					t.Fatalf("no constructor for %s", def.Name)
				}
				rapid.Check(t, func(rt *rapid.T) {
					msg := newCodec(def.Name)
					codectest.Fill(rt, msg, def, v)
					b, err := msg.AppendTo(nil, v)
					if err != nil {
						rt.Fatalf("AppendTo: %v", err)
					}
					got := newCodec(def.Name)
					if err := got.DecodeFrom(b, v); err != nil {
						rt.Fatalf("DecodeFrom(%x): %v", b, err)
					}
					if diff := cmp.Diff(msg, got); diff != "" {
						rt.Fatalf("round trip mismatch (-sent +decoded):\n%s", diff)
					}
					if cm, ok := msg.(control.Message); ok && v == control.ValueVersion {
						key, value, err := control.Encode(cm)
						if err != nil || !bytes.Equal(value, b) {
							rt.Fatalf("Encode = %x, %v; want value %x", value, err, b)
						}
						back, err := control.Decode(key, value)
						if err != nil {
							rt.Fatalf("Decode: %v", err)
						}
						if diff := cmp.Diff(msg, back); diff != "" {
							rt.Fatalf("Decode mismatch (-sent +decoded):\n%s", diff)
						}
					}
				})
			})
		}
	}
}
