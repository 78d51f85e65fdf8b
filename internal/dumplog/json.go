package dumplog

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendMessageJSON appends the JSON form of msg (a pointer to a generated
// metadata record or control message) at the given version, following the
// conventions of Kafka's generated JsonConverter classes:
//
//   - field names are the schema names with the first letter lower-cased
//     ("topicId", "kRaftVersion");
//   - a field is written only at the versions that carry it, and a tagged
//     field only when it differs from its default;
//   - integers are numbers, uuids their base64url text, bytes standard
//     base64 with padding, null strings, bytes and arrays null;
//   - the output is compact, with fields in schema order.
func appendMessageJSON(dst []byte, msg any, version int16) ([]byte, error) {
	v := reflect.ValueOf(msg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return dst, fmt.Errorf("dumplog: json of %T: not a pointer to a struct", msg)
	}
	v = v.Elem()
	s, ok := schemas[v.Type().Name()]
	if !ok {
		return dst, fmt.Errorf("dumplog: json of %s: no schema", v.Type().Name())
	}
	return appendStructJSON(dst, v, s, version)
}

// jsonName returns Kafka's JSON name of a field: its name with the first
// letter lower-cased.
func jsonName(name string) string {
	r, n := utf8.DecodeRuneInString(name)
	return strings.ToLower(string(r)) + name[n:]
}

// appendStructJSON appends the object for struct value v described by s.
func appendStructJSON(dst []byte, v reflect.Value, s *structSchema, version int16) ([]byte, error) {
	var defaults reflect.Value
	dst = append(dst, '{')
	first := true
	for i := range s.fields {
		f := &s.fields[i]
		if !f.versions.contains(version) {
			continue
		}
		fv := v.FieldByName(f.name)
		if !fv.IsValid() {
			return dst, fmt.Errorf("dumplog: json of %s: no Go field %s", v.Type().Name(), f.name)
		}
		if f.tagged.contains(version) {
			if !defaults.IsValid() {
				defaults = defaultOf(v.Type())
			}
			if reflect.DeepEqual(fv.Interface(), defaults.FieldByName(f.name).Interface()) {
				continue
			}
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, jsonName(f.name))
		dst = append(dst, ':')
		var err error
		if dst, err = appendValueJSON(dst, fv, f.elem, f.nullable.contains(version), version); err != nil {
			return dst, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return append(dst, '}'), nil
}

// defaultOf returns a value of struct type t set to its schema defaults
// (its Default method), or the zero value when it has none.
func defaultOf(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if d, ok := p.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	return p.Elem()
}

// uuidType is the Go type of uuid fields.
var uuidType = reflect.TypeFor[[16]byte]()

// appendValueJSON appends the JSON form of one field value.
func appendValueJSON(dst []byte, v reflect.Value, elem *structSchema, nullable bool, version int16) ([]byte, error) {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case reflect.Float64:
		return appendDouble(dst, v.Float()), nil
	case reflect.String:
		return appendString(dst, v.String()), nil
	case reflect.Pointer:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendValueJSON(dst, v.Elem(), elem, false, version)
	case reflect.Array:
		if v.Type() == uuidType {
			var u [16]byte
			reflect.Copy(reflect.ValueOf(&u).Elem(), v)
			return appendString(dst, base64.RawURLEncoding.EncodeToString(u[:])), nil
		}
	case reflect.Struct:
		if elem == nil {
			return dst, fmt.Errorf("dumplog: json: struct %s without schema", v.Type())
		}
		return appendStructJSON(dst, v, elem, version)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.IsNil() && nullable {
				return append(dst, "null"...), nil
			}
			return appendString(dst, base64.StdEncoding.EncodeToString(v.Bytes())), nil
		}
		if v.IsNil() && nullable {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValueJSON(dst, v.Index(i), elem, false, version); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return dst, fmt.Errorf("dumplog: json: unsupported type %s", v.Type())
}

// appendDouble formats f as Java's Double.toString does for the values a
// quota takes: "1.0", "1500.5", "1.0E7", "NaN".
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	abs := math.Abs(f)
	if f == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return append(dst, s...)
	}
	s := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	sign := ""
	if strings.HasPrefix(exp, "-") {
		sign = "-"
	}
	exp = sign + strings.TrimLeft(exp, "+-0")
	return append(dst, (mant + "E" + exp)...)
}

// appendString appends s as a JSON string, escaped as Jackson escapes it:
// quote, backslash and control characters; everything else verbatim.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
