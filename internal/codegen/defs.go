package codegen

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Versions is an inclusive range of message versions. The zero value is
// the empty range, written "none".
type Versions struct {
	// Lo and Hi bound the range; Hi is math.MaxInt16 for an open range
	// ("3+").
	Lo, Hi int16
	// Set reports whether the range is non-empty.
	Set bool
}

// ParseVersions parses "none", "N", "N+" or "N-M".
func ParseVersions(s string) (Versions, error) {
	if s == "none" {
		return Versions{}, nil
	}
	num := func(t string) (int16, error) {
		n, err := strconv.ParseInt(t, 10, 16)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad version %q", t)
		}
		return int16(n), nil
	}
	if lo, ok := strings.CutSuffix(s, "+"); ok {
		n, err := num(lo)
		if err != nil {
			return Versions{}, err
		}
		return Versions{Lo: n, Hi: math.MaxInt16, Set: true}, nil
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err := num(lo)
		if err != nil {
			return Versions{}, err
		}
		b, err := num(hi)
		if err != nil {
			return Versions{}, err
		}
		if b < a {
			return Versions{}, fmt.Errorf("empty version range %q", s)
		}
		return Versions{Lo: a, Hi: b, Set: true}, nil
	}
	n, err := num(s)
	if err != nil {
		return Versions{}, err
	}
	return Versions{Lo: n, Hi: n, Set: true}, nil
}

// Contains reports whether v is in the range.
func (r Versions) Contains(v int16) bool { return r.Set && v >= r.Lo && v <= r.Hi }

// Open reports whether the range has no upper bound.
func (r Versions) Open() bool { return r.Set && r.Hi == math.MaxInt16 }

// Intersect returns the versions in both ranges.
func (r Versions) Intersect(o Versions) Versions {
	if !r.Set || !o.Set {
		return Versions{}
	}
	lo, hi := max(r.Lo, o.Lo), min(r.Hi, o.Hi)
	if hi < lo {
		return Versions{}
	}
	return Versions{Lo: lo, Hi: hi, Set: true}
}

// Covers reports whether every version in o is in r.
func (r Versions) Covers(o Versions) bool {
	return !o.Set || (r.Set && r.Lo <= o.Lo && r.Hi >= o.Hi)
}

// String formats the range in the notation ParseVersions reads.
func (r Versions) String() string {
	switch {
	case !r.Set:
		return "none"
	case r.Open():
		return fmt.Sprintf("%d+", r.Lo)
	case r.Lo == r.Hi:
		return strconv.Itoa(int(r.Lo))
	default:
		return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
	}
}

// Kind says what a message is used for.
type Kind string

// Message kinds.
const (
	// KindMetadata is a record of the metadata log; it has an API key and
	// is framed by package metadata.
	KindMetadata Kind = "metadata"
	// KindData is a plain data structure (control-record keys and
	// values); it has no API key.
	KindData Kind = "data"
	// KindRequest and KindResponse are the two halves of one of Krabka's
	// private RPCs (docs/wire.md); they have an API key, and a request
	// FooRequest pairs with the response FooResponse of the same key.
	KindRequest  Kind = "request"
	KindResponse Kind = "response"
)

// IsRPC reports whether k is KindRequest or KindResponse.
func (k Kind) IsRPC() bool { return k == KindRequest || k == KindResponse }

// HasAPIKey reports whether messages of kind k carry an API key.
func (k Kind) HasAPIKey() bool { return k == KindMetadata || k.IsRPC() }

// Message is one parsed definition file: a top-level structure with its
// versions.
type Message struct {
	// Name is the message's name (a Go identifier).
	Name string
	// Kind is KindMetadata, KindData, KindRequest or KindResponse.
	Kind Kind
	// APIKey is the record's API key, or -1 when the message has none.
	APIKey int
	// Valid is the range of versions the message exists in.
	Valid Versions
	// Flexible is the range of versions that use the compact encodings
	// and tagged fields.
	Flexible Versions
	// About documents the message.
	About string
	// Fields are the top-level fields in wire order.
	Fields []*Field
	// Common are the shared structures that fields refer to by name.
	Common []*Struct
	// Pos is where the message is declared (file:line).
	Pos string
}

// Struct is a named shared structure (Kafka's commonStructs).
type Struct struct {
	// Name is the structure's name.
	Name string
	// Versions is the range in which the structure is used.
	Versions Versions
	// About documents the structure.
	About string
	// Fields are its fields in wire order.
	Fields []*Field
	// Pos is where it is declared.
	Pos string
}

// Field is one field of a message or structure.
type Field struct {
	// Name is the field's name.
	Name string
	// Type is the field type as written: a primitive ("int32",
	// "string"), a structure name, or "[]" followed by either.
	Type string
	// Versions is the range of message versions that carry the field.
	Versions Versions
	// Nullable is the range of versions in which the field may be null.
	Nullable Versions
	// Tagged is the range of versions in which the field is a tagged
	// field; Tag is its tag (-1 when never tagged).
	Tagged Versions
	Tag    int
	// Default is the field's default value as written, and HasDefault
	// says whether one was written.
	Default    string
	HasDefault bool
	// Entity is Kafka's entity type annotation ("brokerId",
	// "topicName"), documentation only.
	Entity string
	// MapKey marks the field as a key of the enclosing array of
	// structures.
	MapKey bool
	// Ignorable allows encoding the field at a version that lacks it by
	// dropping its value.
	Ignorable bool
	// Inline is the number of elements of an array field that the Go
	// struct holds room for, so that decoding an array that short
	// allocates nothing (0: none).
	Inline int
	// About documents the field.
	About string
	// Fields holds the fields of an inline structure type.
	Fields []*Field
	// Pos is where the field is declared.
	Pos string
}

// IsPrimitive reports whether t names a primitive type.
func IsPrimitive(t string) bool {
	switch t {
	case "bool", "int8", "int16", "uint16", "int32", "int64", "float64",
		"string", "bytes", "uuid", "records":
		return true
	}
	return false
}

// IsArray reports whether the field is an array.
func (f *Field) IsArray() bool { return strings.HasPrefix(f.Type, "[]") }

// Elem returns the element type of an array field, or the type itself.
func (f *Field) Elem() string { return strings.TrimPrefix(f.Type, "[]") }

// IsStruct reports whether the field's type (or element type) is a
// structure.
func (f *Field) IsStruct() bool { return !IsPrimitive(f.Elem()) }

// CanBeNull reports whether the field's type admits null.
func (f *Field) CanBeNull() bool {
	switch f.Type {
	case "string", "bytes", "records":
		return true
	}
	return f.IsArray()
}
