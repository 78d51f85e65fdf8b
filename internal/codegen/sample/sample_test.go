package sample

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/codegen"
	"github.com/krabka-go/krabka/internal/codegen/codectest"
	"github.com/krabka-go/krabka/internal/codegen/gogen"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for s != "" {
		s = strings.TrimLeft(s, " |\n\t")
		if s == "" {
			break
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			out = append(out, s[1:end+1]...)
			s = s[end+2:]
			continue
		}
		b, err := hex.DecodeString(s[:2])
		if err != nil {
			t.Fatalf("bad hex %q", s[:2])
		}
		out = append(out, b...)
		s = s[2:]
	}
	return out
}

const zid = "00112233445566778899aabbccddeeff"

func zuuid() [16]byte {
	var u [16]byte
	hex.Decode(u[:], []byte(zid))
	return u
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name    string
		version int16
		msg     func() *Sample
		hex     string
	}{
		{
			name: "classic v0", version: 0,
			msg: func() *Sample {
				s := NewSample()
				s.B, s.D, s.E = "hi", []byte{1}, []int64{5}
				s.F = []SampleItem{{K: "k", V: 2.5, W: -1}}
				s.K = []SampleShared{{Z: zuuid()}}
				return s
			},
			hex: `00000010 | 0002 "hi" | 00000001 01 | 00000001 0000000000000005 | 00000001 0001 "k" | ffffffff |
				00000001 ` + zid + ` | fd`,
		},
		{
			name: "classic v1 with null C", version: 1,
			msg: func() *Sample {
				s := NewSample()
				s.D = []byte{}
				return s
			},
			hex: `00000010 | 0000 | ffff | 00000000 | 00000000 | 00000000 | 01 | ffffffff | 00000000 | fd`,
		},
		{
			name: "flexible v3 with tagged fields", version: 3,
			msg: func() *Sample {
				s := NewSample()
				s.B, s.D, s.E = "hi", []byte{1}, []int64{5}
				s.F = []SampleItem{{K: "k", V: 2.5, W: -1}}
				s.K = []SampleShared{{Z: zuuid(), N: 7}}
				s.L = 4
				s.I.X = 1
				return s
			},
			hex: `00000010 | 03 "hi" | 00 | 02 01 | 02 0000000000000005 | 02 02 "k" 4004000000000000 00 |
				0050 | 00 | 02 ` + zid + ` 07 00 | 02 01 01 04 03 06 00000001 00 00`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			msg := tc.msg()
			got, err := msg.AppendTo(nil, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendTo =\n%x\nwant\n%x", got, want)
			}
			var back Sample
			if err := back.DecodeFrom(want, tc.version); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(msg, &back); diff != "" {
				t.Fatalf("DecodeFrom mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionRules(t *testing.T) {
	s := NewSample()
	s.G = false
	var ee *EncodeError
	if _, err := s.AppendTo(nil, 3); !errors.As(err, &ee) || ee.Field != "G" {
		t.Errorf("non-default G at v3: %v, want EncodeError for G", err)
	}
	s = NewSample()
	s.H = 81
	b, err := s.AppendTo(nil, 0)
	if err != nil {
		t.Fatalf("ignorable H at v0: %v", err)
	}
	var back Sample
	if err := back.DecodeFrom(b, 0); err != nil || back.H != 80 {
		t.Errorf("ignorable H decoded as %d, %v; want the default 80", back.H, err)
	}
	s = NewSample()
	s.D = nil
	if _, err := s.AppendTo(nil, 1); !errors.As(err, &ee) || ee.Field != "D" || !strings.Contains(ee.Reason, "null") {
		t.Errorf("null D at v1: %v", err)
	}
	s = NewSample()
	s.I.X = 1
	if _, err := s.AppendTo(nil, 1); !errors.As(err, &ee) || ee.Field != "I" {
		t.Errorf("non-default tagged structure at v1: %v", err)
	}
	if err := back.DecodeFrom(unhex(t, "00000010 | ffff"), 0); err == nil {
		t.Error("null B decoded at v0")
	}
	if err := back.DecodeFrom(unhex(t, "00000010 | 0000 | 00000000 | ffffffff"), 0); err == nil {
		t.Error("null E decoded at v0")
	}
}

func TestRoundTrip(t *testing.T) {
	defs, err := codegen.ParseDir("definitions")
	if err != nil {
		t.Fatal(err)
	}
	def := defs[0]
	for v := def.Valid.Lo; v <= def.Valid.Hi; v++ {
		rapid.Check(t, func(rt *rapid.T) {
			msg := NewSample()
			codectest.Fill(rt, msg, def, v)
			b, err := msg.AppendTo(nil, v)
			if err != nil {
				rt.Fatalf("v%d AppendTo: %v", v, err)
			}
			var back Sample
			if err := back.DecodeFrom(b, v); err != nil {
				rt.Fatalf("v%d DecodeFrom(%x): %v", v, b, err)
			}
			if diff := cmp.Diff(msg, &back); diff != "" {
				rt.Fatalf("v%d mismatch (-sent +decoded):\n%s", v, diff)
			}
			again, _ := back.AppendTo(nil, v)
			if !bytes.Equal(again, b) {
				rt.Fatalf("v%d re-encode differs", v)
			}
		})
	}
}

func TestGeneratedFilesUpToDate(t *testing.T) {
	gogen.CheckUpToDate(t, "sample", "definitions", ".")
}

// TestDeterministic generates the metadata package twice and requires
// identical output.
func TestDeterministic(t *testing.T) {
	defs, err := codegen.ParseDir("../../../metadata/definitions")
	if err != nil {
		t.Fatal(err)
	}
	a, err := gogen.Generate("metadata", defs)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := gogen.Generate("metadata", defs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("generation is not deterministic:\n%s", diff)
		}
	}
}
