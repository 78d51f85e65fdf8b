package gogen

import (
	"fmt"
	"slices"

	"github.com/krabka-go/krabka/internal/codegen"
)

func not(c string) string {
	switch c {
	case "":
		return "false"
	case "false":
		return ""
	}
	return "!(" + c + ")"
}

func and(a, b string) string {
	switch {
	case a == "false" || b == "false":
		return "false"
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " && " + b
}

// flexMode is how flexibility varies over a struct's scope.
type flexMode int

const (
	flexNever flexMode = iota
	flexAlways
	flexMixed
)

func (g *gen) flex(scope codegen.Versions) (flexMode, string) {
	switch c := cond(g.msg.Flexible, scope); c {
	case "":
		return flexAlways, ""
	case "false":
		return flexNever, ""
	default:
		return flexMixed, c
	}
}

// taggedFields returns the fields of si that are tagged somewhere in its
// scope, in ascending tag order.
func (g *gen) taggedFields(si *structInfo) []*codegen.Field {
	var out []*codegen.Field
	for _, f := range si.fields {
		if cond(f.Tagged, si.scope) != "false" {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *codegen.Field) int { return a.Tag - b.Tag })
	return out
}

// withFlex emits body for the flexible and/or the non-flexible versions of
// scope, according to mode; body receives the versions it covers. Types
// whose encoding does not depend on flexibility get one body.
func (g *gen) withFlex(mode flexMode, f *codegen.Field, scope codegen.Versions, body func(flex bool, scope codegen.Versions)) {
	flexScope := scope.Intersect(g.msg.Flexible)
	classic := scope
	if g.msg.Flexible.Set {
		classic = scope.Intersect(codegen.Versions{Lo: 0, Hi: g.msg.Flexible.Lo - 1, Set: g.msg.Flexible.Lo > 0})
	}
	switch {
	case mode == flexAlways:
		body(true, scope)
	case mode == flexNever:
		body(false, scope)
	case !flexDependent(f):
		body(true, scope)
	default:
		g.p("if flex {")
		body(true, flexScope)
		g.p("} else {")
		body(false, classic)
		g.p("}")
	}
}

// flexDependent reports whether f's own encoding differs between flexible
// and non-flexible versions (structures handle their flexibility
// themselves).
func flexDependent(f *codegen.Field) bool {
	if f.IsArray() {
		return true
	}
	switch f.Type {
	case "string", "bytes", "records":
		return true
	}
	return false
}

func (g *gen) emitEncode(si *structInfo) error {
	name := si.goName
	scope := si.scope
	mode, fc := g.flex(scope)
	g.p("")
	g.p("func (s *%s) appendTo(dst []byte, version int16) ([]byte, error) {", name)
	for _, f := range si.fields {
		if f.IsStruct() {
			g.p("var err error")
			break
		}
	}
	if mode == flexMixed {
		g.p("flex := %s", fc)
	}
	for _, f := range si.fields {
		present := cond(f.Versions, scope)
		e := "s." + f.Name
		write := condSet(func(v int16) bool { return f.Versions.Contains(v) && !f.Tagged.Contains(v) }, scope)
		if write != "false" {
			if write != "" {
				g.p("if %s {", write)
			}
			g.withFlex(mode, f, scope.Intersect(f.Versions), func(flex bool, sc codegen.Versions) { g.writeValue(f, e, flex, sc) })
			if write != "" {
				g.p("}")
			}
		}
		if present != "" && !f.Ignorable {
			g.p("if %s && %s {", not(present), g.notDefault(f, e))
			g.p("return dst, &EncodeError{Field: %q, Reason: \"the field does not exist at this version and holds a non-default value\"}", f.Name)
			g.p("}")
		}
	}
	if mode != flexNever && g.rpc() {
		if mode == flexMixed {
			g.p("if flex {")
		}
		g.p("dst = append(dst, 0) // an empty tagged-field section")
		if mode == flexMixed {
			g.p("}")
		}
	}
	if mode != flexNever && !g.rpc() {
		if mode == flexMixed {
			g.p("if flex {")
		}
		tfs := g.taggedFields(si)
		g.p("u := s.UnknownTags")
		known := "nil"
		if len(tfs) > 0 {
			known = "knownTags" + name
		}
		g.p("if len(u) > 0 {")
		g.p("if err := genrt.CheckUnknownTags(u, version, %s); err != nil {", known)
		g.p("return dst, err")
		g.p("}")
		g.p("}")
		g.p("n := len(u)")
		for i, f := range tfs {
			g.p("tag%d := %s", i, and(cond(f.Tagged, scope), g.notDefault(f, "s."+f.Name)))
			g.p("if tag%d {", i)
			g.p("n++")
			g.p("}")
		}
		g.p("dst = kbin.AppendUvarint(dst, uint32(n))")
		for i, f := range tfs {
			g.p("if tag%d {", i)
			if f.Tag > 0 {
				g.p("for len(u) > 0 && u[0].Tag < %d {", f.Tag)
				g.p("dst = genrt.AppendRawTag(dst, u[0])")
				g.p("u = u[1:]")
				g.p("}")
			}
			g.p("dst = kbin.AppendUvarint(dst, %d)", f.Tag)
			g.p("at := len(dst)")
			g.writeValue(f, "s."+f.Name, true, scope.Intersect(f.Tagged))
			g.p("dst = kbin.InsertUvarint(dst, at, uint32(len(dst)-at))")
			g.p("}")
		}
		g.p("for _, t := range u {")
		g.p("dst = genrt.AppendRawTag(dst, t)")
		g.p("}")
		if mode == flexMixed {
			g.p("}")
		}
		if len(tfs) > 0 {
			g.p("return dst, nil")
			g.p("}")
			g.p("")
			g.p("// knownTags%s reports whether tag is a field of %s at version.", name, name)
			g.p("func knownTags%s(tag uint32, version int16) bool {", name)
			g.p("switch tag {")
			for _, f := range tfs {
				c := cond(f.Tagged, scope)
				if c == "" {
					c = "true"
				}
				g.p("case %d:", f.Tag)
				g.p("return %s", c)
			}
			g.p("}")
			g.p("return false")
			g.p("}")
			return nil
		}
	}
	g.p("return dst, nil")
	g.p("}")
	return nil
}

// writeValue emits code appending e, the value of f, with the given
// flexibility; scope is the set of versions where this code runs.
func (g *gen) writeValue(f *codegen.Field, e string, flex bool, scope codegen.Versions) {
	nc := cond(f.Nullable, scope)
	nullErr := fmt.Sprintf("return dst, &EncodeError{Field: %q, Reason: \"null is not allowed at this version\"}", f.Name)
	writeNull := func(nullLine string) {
		if nc == "false" {
			g.p("%s", nullErr)
			return
		}
		if nc != "" {
			g.p("if %s {", not(nc))
			g.p("%s", nullErr)
			g.p("}")
		}
		g.p("%s", nullLine)
	}
	switch {
	case f.IsArray():
		nullable := f.Nullable.Set
		if nullable {
			g.p("if %s == nil {", e)
			if flex {
				writeNull("dst = append(dst, 0)")
			} else {
				writeNull("dst = kbin.AppendInt32(dst, -1)")
			}
			g.p("} else {")
		}
		if flex {
			g.p("dst = kbin.AppendCompactArrayLen(dst, len(%s))", e)
		} else {
			g.p("dst = kbin.AppendArrayLen(dst, len(%s))", e)
		}
		elem := f.Elem()
		if codegen.IsPrimitive(elem) {
			g.p("for _, v := range %s {", e)
			g.writePrimitive(elem, "v", f.Name, flex)
			g.p("}")
		} else {
			g.p("for i := range %s {", e)
			g.p("if dst, err = %s[i].appendTo(dst, version); err != nil {", e)
			g.p("return dst, genrt.PrefixEncodeError(err, fmt.Sprintf(\"%s[%%d]\", i))", f.Name)
			g.p("}")
			g.p("}")
		}
		if nullable {
			g.p("}")
		}
	case f.IsStruct():
		g.p("if dst, err = %s.appendTo(dst, version); err != nil {", e)
		g.p("return dst, genrt.PrefixEncodeError(err, %q)", f.Name)
		g.p("}")
	case f.Type == "string" && f.Nullable.Set:
		g.p("if %s == nil {", e)
		if flex {
			writeNull("dst = append(dst, 0)")
		} else {
			writeNull("dst = kbin.AppendInt16(dst, -1)")
		}
		g.p("} else {")
		g.writePrimitive("string", "*"+e, f.Name, flex)
		g.p("}")
	case (f.Type == "bytes" || f.Type == "records") && f.Nullable.Set:
		g.p("if %s == nil {", e)
		if flex {
			writeNull("dst = append(dst, 0)")
		} else {
			writeNull("dst = kbin.AppendInt32(dst, -1)")
		}
		g.p("} else {")
		g.writePrimitive(f.Type, e, f.Name, flex)
		g.p("}")
	default:
		g.writePrimitive(f.Type, e, f.Name, flex)
	}
}

func (g *gen) writePrimitive(t, e, field string, flex bool) {
	switch t {
	case "bool":
		g.p("dst = kbin.AppendBool(dst, %s)", e)
	case "int8":
		g.p("dst = kbin.AppendInt8(dst, %s)", e)
	case "int16":
		g.p("dst = kbin.AppendInt16(dst, %s)", e)
	case "uint16":
		g.p("dst = kbin.AppendUint16(dst, %s)", e)
	case "int32":
		g.p("dst = kbin.AppendInt32(dst, %s)", e)
	case "int64":
		g.p("dst = kbin.AppendInt64(dst, %s)", e)
	case "float64":
		g.p("dst = kbin.AppendFloat64(dst, %s)", e)
	case "uuid":
		g.p("dst = kbin.AppendUUID(dst, %s)", e)
	case "string":
		if !g.rpc() {
			g.p("if len(%s) > kbin.MaxStringLen {", e)
			g.p("return dst, &EncodeError{Field: %q, Reason: fmt.Sprintf(\"string of %%d bytes exceeds %%d\", len(%s), kbin.MaxStringLen)}", field, e)
			g.p("}")
		}
		if flex {
			g.p("dst = kbin.AppendCompactString(dst, %s)", e)
		} else {
			g.p("dst = kbin.AppendString(dst, %s)", e)
		}
	case "bytes", "records":
		g.p("if int64(len(%s)) > 0x7fffffff-1 {", e)
		g.p("return dst, &EncodeError{Field: %q, Reason: \"bytes longer than 2147483646\"}", field)
		g.p("}")
		if flex {
			g.p("dst = kbin.AppendCompactBytes(dst, %s)", e)
		} else {
			g.p("dst = kbin.AppendBytes(dst, %s)", e)
		}
	default:
		panic("gogen: invariant: writePrimitive of non-primitive " + t)
	}
}

// minSize returns the smallest encoded size of a value of type t (an
// element type) over the versions in scope.
func (g *gen) minSize(t string, scope codegen.Versions) int {
	best := -1
	for v := scope.Lo; v <= scope.Hi && v <= g.msg.Valid.Hi; v++ {
		n := g.minSizeAt(t, v)
		if best < 0 || n < best {
			best = n
		}
		if v == 32767 {
			break
		}
	}
	if best < 1 {
		best = 1
	}
	return best
}

func (g *gen) minSizeAt(t string, v int16) int {
	flex := g.msg.Flexible.Contains(v)
	switch t {
	case "bool", "int8":
		return 1
	case "int16", "uint16":
		return 2
	case "int32":
		return 4
	case "int64", "float64":
		return 8
	case "uuid":
		return 16
	case "string":
		if flex {
			return 1
		}
		return 2
	case "bytes", "records":
		if flex {
			return 1
		}
		return 4
	}
	si := g.structs[g.goStruct(t)]
	n := 0
	if flex {
		n = 1
	}
	for _, f := range si.fields {
		if !f.Versions.Contains(v) || f.Tagged.Contains(v) {
			continue
		}
		switch {
		case f.IsArray() && flex:
			n++
		case f.IsArray():
			n += 4
		default:
			n += g.minSizeAt(f.Type, v)
		}
	}
	return n
}

func (g *gen) emitDecode(si *structInfo) error {
	name := si.goName
	scope := si.scope
	mode, fc := g.flex(scope)
	g.p("")
	g.p("func (s *%s) readFrom(r *kbin.Reader, version int16) error {", name)
	if mode == flexMixed {
		g.p("flex := %s", fc)
	}
	if mode != flexNever && !g.rpc() {
		g.p("s.UnknownTags = nil")
	}
	for _, f := range si.fields {
		read := condSet(func(v int16) bool { return f.Versions.Contains(v) && !f.Tagged.Contains(v) }, scope)
		e := "s." + f.Name
		if read == "false" {
			g.p("%s", g.defaultAssign(f, e, false))
			continue
		}
		if read != "" {
			g.p("if %s {", read)
		}
		g.withFlex(mode, f, scope.Intersect(f.Versions), func(flex bool, sc codegen.Versions) { g.readValue(f, e, "r", "r", flex, sc) })
		if read != "" {
			g.p("} else {")
			g.p("%s", g.defaultAssign(f, e, false))
			g.p("}")
		}
	}
	if mode != flexNever && g.rpc() {
		if mode == flexMixed {
			g.p("if flex {")
		}
		g.p("if r.SkipTags(); r.Err() != nil {")
		g.p("return genrt.FieldError(\"tagged fields\", r.Err())")
		g.p("}")
		if mode == flexMixed {
			g.p("}")
		}
	}
	if mode != flexNever && !g.rpc() {
		if mode == flexMixed {
			g.p("if flex {")
		}
		tfs := g.taggedFields(si)
		g.p("n := r.TagCount()")
		g.p("if err := r.Err(); err != nil {")
		g.p("return genrt.FieldError(\"tagged fields\", err)")
		g.p("}")
		g.p("prev := int64(-1)")
		g.p("for range n {")
		g.p("tag, sub := r.NextTag(prev)")
		g.p("if err := r.Err(); err != nil {")
		g.p("return genrt.FieldError(\"tagged fields\", err)")
		g.p("}")
		g.p("prev = int64(tag)")
		if len(tfs) > 0 {
			g.p("switch {")
			for _, f := range tfs {
				c := and(fmt.Sprintf("tag == %d", f.Tag), cond(f.Tagged, scope))
				g.p("case %s:", c)
				e := "s." + f.Name
				g.readValue(f, e, "sub", "&sub", true, scope.Intersect(f.Tagged))
				g.p("if sub.ExpectEnd(%q); sub.Err() != nil {", "tagged field "+f.Name)
				g.p("return genrt.FieldError(%q, sub.Err())", f.Name)
				g.p("}")
				g.p("if %s {", g.isDefault(f, e))
				g.p("return genrt.FieldError(%q, genrt.DefaultTagError(tag))", f.Name)
				g.p("}")
			}
			g.p("default:")
		}
		g.p("s.UnknownTags = append(s.UnknownTags, RawTaggedField{Tag: tag, Data: sub.CopyRest()})")
		if len(tfs) > 0 {
			g.p("}")
		}
		g.p("}")
		if mode == flexMixed {
			g.p("}")
		}
	}
	g.p("return nil")
	g.p("}")
	return nil
}

// readValue emits code reading f into e from the reader rv (rp is a
// pointer expression to it).
func (g *gen) readValue(f *codegen.Field, e, rv, rp string, flex bool, scope codegen.Versions) {
	nc := cond(f.Nullable, scope)
	check := func() {
		g.p("if err := %s.Err(); err != nil {", rv)
		g.p("return genrt.FieldError(%q, err)", f.Name)
		g.p("}")
	}
	switch {
	case f.IsArray():
		min := g.minSize(f.Elem(), scope)
		if flex {
			g.p("if n := %s.CompactArrayLen(%d); n < 0 {", rv, min)
		} else {
			g.p("if n := %s.ArrayLen(%d); n < 0 {", rv, min)
		}
		switch nc {
		case "":
			g.p("%s = nil", e)
		case "false":
			g.p("%s.Invalid(\"array length\", \"null in non-nullable field %s\")", rv, f.Name)
		default:
			g.p("if %s {", nc)
			g.p("%s = nil", e)
			g.p("} else {")
			g.p("%s.Invalid(\"array length\", \"null in non-nullable field %s\")", rv, f.Name)
			g.p("}")
		}
		if !f.Nullable.Set {
			g.p("} else if n == 0 {")
			g.p("%s = nil", e)
		}
		g.p("} else {")
		if f.Inline > 0 {
			g.p("if n <= %d {", f.Inline)
			g.p("%s = s.%s[:n:n]", e, inlineName(f))
			g.p("} else {")
			g.p("%s = make(%s, n)", e, g.goType(f))
			g.p("}")
		} else {
			// A value decoded again reuses the array of its previous
			// decode (see DecodeFrom).
			g.p("%s = genrt.Resize(%s, n)", e, e)
		}
		elem := f.Elem()
		if codegen.IsPrimitive(elem) {
			g.p("for i := range %s {", e)
			g.readPrimitive(elem, e+"[i]", rv, flex)
			g.p("}")
		} else {
			g.p("for i := range %s {", e)
			g.p("if err := %s[i].readFrom(%s, version); err != nil {", e, rp)
			g.p("return genrt.PrefixDecodeError(err, fmt.Sprintf(\"%s[%%d]\", i))", f.Name)
			g.p("}")
			g.p("}")
		}
		g.p("}")
		check()
	case f.IsStruct():
		g.p("if err := %s.readFrom(%s, version); err != nil {", e, rp)
		g.p("return genrt.PrefixDecodeError(err, %q)", f.Name)
		g.p("}")
	case f.Type == "string" && f.Nullable.Set:
		nullRead, plainRead := rv+".NullableString()", rv+".String()"
		if flex {
			nullRead, plainRead = rv+".CompactNullableString()", rv+".CompactString()"
		}
		if g.rpc() {
			nullRead, plainRead = rv+".CompactNullableStringUTF8()", rv+".CompactStringUTF8()"
		}
		switch nc {
		case "":
			g.p("%s = %s", e, nullRead)
		case "false":
			g.p("{")
			g.p("v := %s", plainRead)
			g.p("%s = &v", e)
			g.p("}")
		default:
			g.p("if %s {", nc)
			g.p("%s = %s", e, nullRead)
			g.p("} else {")
			g.p("v := %s", plainRead)
			g.p("%s = &v", e)
			g.p("}")
		}
		check()
	case (f.Type == "bytes" || f.Type == "records") && f.Nullable.Set:
		nullRead, plainRead := rv+".NullableBytes()", rv+".Bytes()"
		if flex {
			nullRead, plainRead = rv+".CompactNullableBytes()", rv+".CompactBytes()"
		}
		if g.rpc() {
			nullRead, plainRead = rv+".CompactNullableBytesAlias()", rv+".CompactBytesAlias()"
		}
		plain := func() {
			g.p("%s = %s", e, plainRead)
			g.p("if %s == nil {", e)
			g.p("%s = []byte{}", e)
			g.p("}")
		}
		switch nc {
		case "":
			g.p("%s = %s", e, nullRead)
		case "false":
			plain()
		default:
			g.p("if %s {", nc)
			g.p("%s = %s", e, nullRead)
			g.p("} else {")
			plain()
			g.p("}")
		}
		check()
	default:
		g.readPrimitive(f.Type, e, rv, flex)
		check()
	}
}

func (g *gen) readPrimitive(t, e, rv string, flex bool) {
	if g.rpc() {
		// The private RPCs read as Kafka's readers do: any non-zero byte
		// is true; strings must be UTF-8 (of any length); bytes alias the
		// input. Every version is flexible.
		switch t {
		case "bool":
			g.p("%s = %s.Int8() != 0", e, rv)
			return
		case "string":
			g.p("%s = %s.CompactStringUTF8()", e, rv)
			return
		case "bytes", "records":
			g.p("%s = %s.CompactBytesAlias()", e, rv)
			return
		}
	}
	m := map[string]string{
		"bool": "Bool", "int8": "Int8", "int16": "Int16", "uint16": "Uint16",
		"int32": "Int32", "int64": "Int64", "float64": "Float64", "uuid": "UUID",
	}
	if fn, ok := m[t]; ok {
		g.p("%s = %s.%s()", e, rv, fn)
		return
	}
	var fn string
	switch t {
	case "string":
		fn = "String"
	case "bytes", "records":
		fn = "Bytes"
	default:
		panic("gogen: invariant: readPrimitive of non-primitive " + t)
	}
	if flex {
		fn = "Compact" + fn
	}
	g.p("%s = %s.%s()", e, rv, fn)
}
