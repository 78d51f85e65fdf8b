package dumplog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"

	"github.com/krabka-go/krabka/metadata"
)

// ParsePayload reads a metadata record from the JSON form [AppendPayload]
// writes (and Kafka's kafka-dump-log --cluster-metadata-decoder prints):
// {"type":"<RECORD_TYPE>","version":<v>,"data":{...}}, so that a dump can
// be edited and written back. As Kafka's generated JsonConverter read
// methods do, it requires every field the version carries except tagged
// ones (which keep their defaults when absent), and it refuses fields the
// version does not carry, unknown fields, null where the field is not
// nullable, numbers out of range and malformed uuids or base64.
func ParsePayload(b []byte) (metadata.Record, error) {
	var top map[string]json.RawMessage
	if err := decodeStrict(b, &top); err != nil {
		return nil, fmt.Errorf("dumplog: record JSON: %w", err)
	}
	if top == nil {
		return nil, errors.New("dumplog: record JSON: want an object with type, version and data")
	}
	for k := range top {
		if k != "type" && k != "version" && k != "data" {
			return nil, fmt.Errorf("dumplog: record JSON: unknown key %q (want type, version and data)", k)
		}
	}
	var typ string
	if err := decodeRequired(top, "type", &typ); err != nil {
		return nil, err
	}
	var version int16
	if err := decodeRequired(top, "version", &version); err != nil {
		return nil, err
	}
	if _, ok := top["data"]; !ok {
		return nil, errors.New("dumplog: record JSON: missing key \"data\"")
	}
	rec := recordOfType(typ)
	if rec == nil {
		return nil, fmt.Errorf("dumplog: record JSON: unknown record type %q", typ)
	}
	if version < rec.MinVersion() || version > rec.MaxVersion() {
		return nil, fmt.Errorf("dumplog: %s: version %d is not in %d to %d", typ, version, rec.MinVersion(), rec.MaxVersion())
	}
	v := reflect.ValueOf(rec).Elem()
	s, ok := schemas[v.Type().Name()]
	if !ok {
		return nil, fmt.Errorf("dumplog: %s: no schema", typ)
	}
	if err := parseStruct(top["data"], v, s, version); err != nil {
		return nil, fmt.Errorf("dumplog: %s version %d: %w", typ, version, err)
	}
	rec.SetVersion(version)
	return rec, nil
}

// recordOfType returns a new record whose RecordTypeName is typ, or nil.
func recordOfType(typ string) metadata.Record {
	for _, k := range metadata.APIKeys() {
		if r := metadata.NewRecord(k); r != nil && RecordTypeName(r) == typ {
			return r
		}
	}
	return nil
}

// decodeStrict decodes exactly one JSON value from b into v, numbers kept
// exact.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

func decodeRequired(top map[string]json.RawMessage, key string, v any) error {
	raw, ok := top[key]
	if !ok {
		return fmt.Errorf("dumplog: record JSON: missing key %q", key)
	}
	if err := decodeStrict(raw, v); err != nil {
		return fmt.Errorf("dumplog: record JSON: %s: %w", key, err)
	}
	return nil
}

// parseStruct sets struct value v, described by s, from the JSON object
// raw at version.
func parseStruct(raw json.RawMessage, v reflect.Value, s *structSchema, version int16) error {
	var obj map[string]json.RawMessage
	if err := decodeStrict(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("want an object, got %s", abbreviate(raw))
	}
	known := make(map[string]bool, len(s.fields))
	for i := range s.fields {
		f := &s.fields[i]
		name := jsonName(f.name)
		known[name] = true
		fraw, present := obj[name]
		switch {
		case !f.versions.contains(version):
			if present {
				return fmt.Errorf("field %q is not in version %d", name, version)
			}
			continue
		case !present && f.tagged.contains(version):
			continue
		case !present:
			return fmt.Errorf("missing field %q, which is mandatory in version %d", name, version)
		}
		fv := v.FieldByName(f.name)
		if !fv.IsValid() {
			return fmt.Errorf("no Go field %s", f.name)
		}
		if err := parseValue(fraw, fv, f.elem, f.nullable.contains(version), version); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for k := range obj {
		if !known[k] {
			return fmt.Errorf("unknown field %q", k)
		}
	}
	return nil
}

// abbreviate returns raw for an error message, cut to 40 bytes.
func abbreviate(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// parseValue sets field value v from raw.
func parseValue(raw json.RawMessage, v reflect.Value, elem *structSchema, nullable bool, version int16) error {
	if string(bytes.TrimSpace(raw)) == "null" {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice) && nullable {
			v.SetZero()
			return nil
		}
		return errors.New("null in a field that is not nullable")
	}
	switch v.Kind() {
	case reflect.Bool:
		var b bool
		if err := decodeStrict(raw, &b); err != nil {
			return fmt.Errorf("want a boolean, got %s", abbreviate(raw))
		}
		v.SetBool(b)
		return nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := parseNumber(raw)
		if err != nil {
			return err
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v.OverflowInt(i) {
			return fmt.Errorf("%s is not an integer of %d bits", n, v.Type().Bits())
		}
		v.SetInt(i)
		return nil
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		n, err := parseNumber(raw)
		if err != nil {
			return err
		}
		u, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil || v.OverflowUint(u) {
			return fmt.Errorf("%s is not an unsigned integer of %d bits", n, v.Type().Bits())
		}
		v.SetUint(u)
		return nil
	case reflect.Float64:
		n, err := parseNumber(raw)
		if err != nil {
			return err
		}
		f, err := n.Float64()
		if err != nil {
			return fmt.Errorf("%s is not a double", n)
		}
		v.SetFloat(f)
		return nil
	case reflect.String:
		var s string
		if err := decodeStrict(raw, &s); err != nil {
			return fmt.Errorf("want a string, got %s", abbreviate(raw))
		}
		v.SetString(s)
		return nil
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := parseValue(raw, p.Elem(), elem, false, version); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Array:
		if v.Type() == uuidType {
			var s string
			if err := decodeStrict(raw, &s); err != nil {
				return fmt.Errorf("want a uuid string, got %s", abbreviate(raw))
			}
			b, err := base64.RawURLEncoding.DecodeString(s)
			if err != nil || len(b) != 16 {
				return fmt.Errorf("%q is not a uuid (22 characters of URL-safe base64)", s)
			}
			reflect.Copy(v, reflect.ValueOf(b))
			return nil
		}
	case reflect.Struct:
		if elem == nil {
			return fmt.Errorf("struct %s without schema", v.Type())
		}
		v.Set(defaultOf(v.Type()))
		return parseStruct(raw, v, elem, version)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			var s string
			if err := decodeStrict(raw, &s); err != nil {
				return fmt.Errorf("want a base64 string, got %s", abbreviate(raw))
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return fmt.Errorf("%q is not base64: %w", s, err)
			}
			v.SetBytes(b)
			return nil
		}
		var items []json.RawMessage
		if err := decodeStrict(raw, &items); err != nil {
			return fmt.Errorf("want an array, got %s", abbreviate(raw))
		}
		out := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, it := range items {
			if err := parseValue(it, out.Index(i), elem, false, version); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		v.Set(out)
		return nil
	}
	return fmt.Errorf("unsupported type %s", v.Type())
}

// parseNumber reads a JSON number.
func parseNumber(raw json.RawMessage) (json.Number, error) {
	var n json.Number
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		return "", fmt.Errorf("want a number, got %s", abbreviate(raw))
	}
	if err := decodeStrict(raw, &n); err != nil {
		return "", fmt.Errorf("want a number, got %s", abbreviate(raw))
	}
	return n, nil
}
