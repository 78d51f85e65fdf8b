package codectest

import (
	"math"
	"reflect"
	"slices"

	"pgregory.net/rapid"

	"github.com/krabka-go/krabka/internal/codegen"
)

// Fill sets the fields of the generated struct that ptr points to (which
// must already hold its defaults) to random values valid at version.
func Fill(t *rapid.T, ptr any, m *codegen.Message, version int16) {
	v := reflect.ValueOf(ptr).Elem()
	fillStruct(t, v, m, m.Fields, version, m.Name)
}

func fillStruct(t *rapid.T, v reflect.Value, m *codegen.Message, fields []*codegen.Field, version int16, path string) {
	for _, f := range fields {
		if !f.Versions.Contains(version) {
			continue
		}
		fv := v.FieldByName(f.Name)
		if !fv.IsValid() {
			t.Fatalf("%s has no Go field %s", path, f.Name)
		}
		fillField(t, fv, m, f, version, path+"."+f.Name)
	}
	if m.Flexible.Contains(version) {
		fillUnknownTags(t, v, fields, version, path)
	}
}

func fillUnknownTags(t *rapid.T, v reflect.Value, fields []*codegen.Field, version int16, path string) {
	ut := v.FieldByName("UnknownTags")
	if !ut.IsValid() {
		t.Fatalf("%s has no UnknownTags field", path)
	}
	known := map[uint32]bool{}
	for _, f := range fields {
		if f.Tagged.Contains(version) {
			known[uint32(f.Tag)] = true
		}
	}
	tags := rapid.SliceOfNDistinct(rapid.Uint32Range(0, 40), 0, 3, rapid.ID).Draw(t, path+".UnknownTags")
	tags = slices.DeleteFunc(tags, func(tag uint32) bool { return known[tag] })
	if len(tags) == 0 {
		return
	}
	slices.Sort(tags)
	out := reflect.MakeSlice(ut.Type(), len(tags), len(tags))
	for i, tag := range tags {
		out.Index(i).FieldByName("Tag").SetUint(uint64(tag))
		out.Index(i).FieldByName("Data").SetBytes(rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(t, path+".UnknownTags.Data"))
	}
	ut.Set(out)
}

func fillField(t *rapid.T, fv reflect.Value, m *codegen.Message, f *codegen.Field, version int16, path string) {
	nullNow := f.Nullable.Contains(version)
	if nullNow && rapid.IntRange(0, 4).Draw(t, path+".null") == 0 {
		fv.Set(reflect.Zero(fv.Type()))
		return
	}
	switch {
	case f.IsArray():
		n := rapid.IntRange(0, 4).Draw(t, path+".len")
		if n == 0 && !f.Nullable.Set {
			fv.Set(reflect.Zero(fv.Type()))
			return
		}
		s := reflect.MakeSlice(fv.Type(), n, n)
		elem := f.Elem()
		for i := range n {
			ev := s.Index(i)
			if codegen.IsPrimitive(elem) {
				fillPrimitive(t, ev, elem, false, path)
			} else {
				ev.Addr().MethodByName("Default").Call(nil)
				fillStruct(t, ev, m, structFields(m, f), version, path)
			}
		}
		fv.Set(s)
	case f.IsStruct():
		fillStruct(t, fv, m, structFields(m, f), version, path)
	case fv.Kind() == reflect.Pointer: // nullable string, non-null here
		s := rapid.StringN(0, 12, -1).Draw(t, path)
		fv.Set(reflect.ValueOf(&s))
	default:
		fillPrimitive(t, fv, f.Type, f.Nullable.Set, path)
	}
}

func structFields(m *codegen.Message, f *codegen.Field) []*codegen.Field {
	if len(f.Fields) > 0 {
		return f.Fields
	}
	for _, c := range m.Common {
		if c.Name == f.Elem() {
			return c.Fields
		}
	}
	return nil
}

func fillPrimitive(t *rapid.T, v reflect.Value, typ string, nullableField bool, path string) {
	switch typ {
	case "bool":
		v.SetBool(rapid.Bool().Draw(t, path))
	case "int8":
		v.SetInt(int64(rapid.Int8().Draw(t, path)))
	case "int16":
		v.SetInt(int64(rapid.Int16().Draw(t, path)))
	case "int32":
		v.SetInt(int64(rapid.Int32().Draw(t, path)))
	case "int64":
		v.SetInt(rapid.Int64().Draw(t, path))
	case "uint16":
		v.SetUint(uint64(rapid.Uint16().Draw(t, path)))
	case "float64":
		f := rapid.Float64().Filter(func(f float64) bool { return !math.IsNaN(f) }).Draw(t, path)
		v.SetFloat(f)
	case "string":
		v.SetString(rapid.StringN(0, 12, -1).Draw(t, path))
	case "uuid":
		var u [16]byte
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, path))
		v.Set(reflect.ValueOf(u))
	case "bytes", "records":
		b := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, path)
		if len(b) == 0 {
			if nullableField {
				b = []byte{}
			} else {
				b = nil
			}
		}
		v.SetBytes(b)
	default:
		panic("codectest: invariant: unknown primitive " + typ)
	}
}
