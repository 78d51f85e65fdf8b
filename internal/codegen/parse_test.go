package codegen

import (
	"strings"
	"testing"
)

const header = "message M\nkind data\nversions 0-3\nflexible 2+\n"

const rpcHeader = "message MRequest\nkind request\napikey 1003\nversions 0\nflexible 0+\n"

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no message", "# nothing\n", "no message directive"},
		{"field first", "field A int32 versions=0+\n", "first directive must be message"},
		{"two messages", header + "message N\n", "only one message"},
		{"bad kind", "message M\nkind rpc\n", "kind must be"},
		{"apikey on data", header + "apikey 3\n", "apikey is required for kind metadata and not allowed"},
		{"missing apikey", "message M\nkind metadata\nversions 0\nflexible 0+\n", "apikey is required"},
		{"open message versions", "message M\nkind data\nversions 0+\nflexible 0+\n", "must be closed"},
		{"header after field", header + "field A int32 versions=0+\nversions 1\n", "before the first field"},
		{"missing versions", header + "field A int32\n", "needs versions="},
		{"unknown attribute", header + "field A int32 versions=0+ color=red\n", "unknown attribute"},
		{"repeated attribute", header + "field A int32 versions=0+ versions=1+\n", "repeated"},
		{"bad range", header + "field A int32 versions=3-1\n", "empty version range"},
		{"duplicate field", header + "field A int32 versions=0+\nfield A int32 versions=0+\n", "defined twice"},
		{"nullable int", header + "field A int32 versions=0+ nullable=0+\n", "cannot be nullable"},
		{"tag without tagged", header + "field A int32 versions=0+ tag=1\n", "go together"},
		{"tagged non-flexible", header + "field A int32 versions=0+ tagged=0+ tag=1\n", "not all flexible"},
		{"duplicate tag", header + "field A int32 versions=2+ tagged=2+ tag=1\nfield B int32 versions=2+ tagged=2+ tag=1\n", "tag 1 used by A and B"},
		{"unknown type", header + "field A []Foo versions=0+\n", "unknown type Foo"},
		{"unclosed struct", header + "field A []Foo versions=0+ {\nfield B int8 versions=0+\n", "not closed"},
		{"stray close", header + "}\n", "without an open"},
		{"bad int default", header + "field A int8 versions=0+ default=300\n", "out of range"},
		{"null default not nullable", header + "field A string versions=0+ default=null\n", "needs nullable"},
		{"bool default", header + "field A bool versions=0+ default=yes\n", "true or false"},
		{"mapkey at top", header + "field A string versions=0+ mapkey\n", "mapkey"},
		{"about after close", header + "field A []S versions=0+ {\nfield B int8 versions=0+\n}\nabout x\n", "about must follow"},
		{"reserved name", header + "field UnknownTags int8 versions=0+\n", "reserved"},
		{"version field in metadata", "message M\nkind metadata\napikey 1\nversions 0\nflexible 0+\nfield Version int16 versions=0+\n", "Version"},
		{"field outside versions", header + "field A int8 versions=5+\n", "outside the message's versions"},
		{"request without apikey", "message MRequest\nkind request\nversions 0\nflexible 0+\n", "apikey is required for kind request"},
		{"request name", "message M\nkind request\napikey 1003\nversions 0\nflexible 0+\n", "named <RPC>Request"},
		{"response name", "message MRequest\nkind response\napikey 1003\nversions 0\nflexible 0+\n", "named <RPC>Response"},
		{"request not flexible", "message MRequest\nkind request\napikey 1003\nversions 0-1\nflexible 1+\n", "must be flexible"},
		{"tagged field in request", rpcHeader + "field A int32 versions=0+ tagged=0+ tag=0\n", "no tagged fields"},
		{"version field in request", rpcHeader + "field Version int16 versions=0+\n", "Version"},
		{"reserved name in request", rpcHeader + "field Key int16 versions=0+\n", "reserved"},
		{"inline on a scalar", header + "field A int32 versions=0+ inline=1\n", "only for arrays"},
		{"inline zero", header + "field A []int32 versions=0+ inline=0\n", "bad inline"},
		{"unterminated quote", header + "field A string versions=0+ default=\"abc\n", "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.def", tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	src := header + `about M is a test.
about Second line.
field A int32 versions=0+ default=-0x10 entity=brokerId
  about The A.
field S string versions=1+ nullable=1+ default="two words"
field T []Item versions=0+ {
  about Items.
  field K string versions=0+ mapkey
  field V float64 versions=0+ default=1.5 tagged=2+ tag=0 ignorable
}
field C []Shared versions=3+ tagged=3+ tag=4

common Shared versions=0+ {
  field X uuid versions=0+
}
`
	m, err := Parse("x.def", src)
	if err != nil {
		t.Fatal(err)
	}
	if m.About != "M is a test. Second line." || len(m.Fields) != 4 || len(m.Common) != 1 {
		t.Fatalf("parsed %+v", m)
	}
	a := m.Fields[0]
	if a.Default != "-0x10" || !a.HasDefault || a.Entity != "brokerId" || a.About != "The A." {
		t.Errorf("A = %+v", a)
	}
	if v, err := ParseInt(a.Default, 32); err != nil || v != -16 {
		t.Errorf("ParseInt(%q) = %d, %v", a.Default, v, err)
	}
	if s := m.Fields[1]; s.Default != "two words" || s.Nullable.String() != "1+" {
		t.Errorf("S = %+v", s)
	}
	tf := m.Fields[2]
	if len(tf.Fields) != 2 || !tf.Fields[0].MapKey || !tf.Fields[1].Ignorable || tf.Fields[1].Tag != 0 || tf.About != "Items." {
		t.Errorf("T = %+v", tf)
	}
	if c := m.Fields[3]; c.Tag != 4 || c.Tagged.String() != "3+" {
		t.Errorf("C = %+v", c)
	}
}

func TestParseRPC(t *testing.T) {
	m, err := Parse("x.def", rpcHeader+"field Records []bytes versions=0+ inline=2\n")
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != KindRequest || !m.Kind.IsRPC() || !m.Kind.HasAPIKey() || m.APIKey != 1003 || m.Fields[0].Inline != 2 {
		t.Errorf("parsed %+v, field %+v", m, m.Fields[0])
	}
	if KindData.IsRPC() || KindMetadata.IsRPC() || KindData.HasAPIKey() || !KindResponse.IsRPC() {
		t.Error("kind predicates wrong")
	}
}

func TestVersions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		lo   int16
		want string
	}{{"none", 0, "none"}, {"0+", 0, "0+"}, {"3", 3, "3"}, {"1-4", 1, "1-4"}} {
		v, err := ParseVersions(tc.in)
		if err != nil || v.String() != tc.want || v.Lo != tc.lo {
			t.Errorf("ParseVersions(%q) = %v, %v", tc.in, v, err)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1-", "+", "2-1", "99999"} {
		if _, err := ParseVersions(bad); err == nil {
			t.Errorf("ParseVersions(%q) succeeded", bad)
		}
	}
	r, _ := ParseVersions("1-3")
	if !r.Contains(1) || !r.Contains(3) || r.Contains(0) || r.Contains(4) {
		t.Error("Contains wrong")
	}
}
