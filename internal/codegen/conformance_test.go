package codegen_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/codegen"
	"github.com/krabka-go/krabka/internal/sharedtest"
)

// controlSchemas are the files of kafka-schemas/message that describe
// control records (the key and the five values of the metadata log).
var controlSchemas = []string{
	"ControlRecordTypeSchema.json", "LeaderChangeMessage.json", "SnapshotHeaderRecord.json",
	"SnapshotFooterRecord.json", "KRaftVersionRecord.json", "VotersRecord.json",
}

// stripComments removes Kafka's // comments (outside strings) so that the
// schema is strict JSON.
func stripComments(src []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				out = append(out, '\n')
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

func str(t *testing.T, where string, m map[string]json.RawMessage, key string) (string, bool) {
	t.Helper()
	raw, ok := m[key]
	if !ok {
		return "", false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s: %v", where, key, err)
	}
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return fmt.Sprint(v), true
	case float64:
		return fmt.Sprint(int64(v)), true
	}
	t.Fatalf("%s: %s has unexpected JSON type %T", where, key, v)
	return "", false
}

func objects(t *testing.T, where string, raw json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	if raw == nil {
		return nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return out
}

func versions(t *testing.T, where, s string, ok bool) codegen.Versions {
	t.Helper()
	if !ok {
		return codegen.Versions{}
	}
	v, err := codegen.ParseVersions(s)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return v
}

func loadDefs(t *testing.T, dir string) map[string]*codegen.Message {
	t.Helper()
	msgs, err := codegen.ParseDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*codegen.Message{}
	for _, m := range msgs {
		out[m.Name] = m
	}
	return out
}

// TestConformance compares every definition with Kafka 4.3.1's JSON schema
// field by field: the metadata records with kafka-schemas/metadata and the
// control records with the six control schemas of kafka-schemas/message.
func TestConformance(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-schemas")
	sets := []struct {
		defs    string
		schemas []string
	}{
		{defs: "../../metadata/definitions"},
		{defs: "../control/definitions"},
	}
	metaFiles, err := filepath.Glob(filepath.Join(root, "metadata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sets[0].schemas = metaFiles
	for _, f := range controlSchemas {
		sets[1].schemas = append(sets[1].schemas, filepath.Join(root, "message", f))
	}
	if len(metaFiles) != 26 {
		t.Fatalf("found %d metadata schemas, want 26", len(metaFiles))
	}
	for _, set := range sets {
		defs := loadDefs(t, set.defs)
		matched := map[string]bool{}
		for _, path := range set.schemas {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(stripComments(src), &top); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			name, _ := str(t, path, top, "name")
			def := defs[name]
			if def == nil {
				t.Errorf("%s: schema %s has no definition in %s", filepath.Base(path), name, set.defs)
				continue
			}
			matched[name] = true
			t.Run(name, func(t *testing.T) { compareMessage(t, filepath.Base(path), top, def) })
		}
		for name, m := range defs {
			if !matched[name] {
				t.Errorf("%s: definition %s has no Kafka schema", m.Pos, name)
			}
		}
	}
}

func compareMessage(t *testing.T, file string, top map[string]json.RawMessage, def *codegen.Message) {
	for k := range top {
		switch k {
		case "apiKey", "type", "name", "validVersions", "flexibleVersions", "fields", "commonStructs", "listeners":
		default:
			t.Errorf("%s: schema key %q is not modelled by the definition format", file, k)
		}
	}
	kind, _ := str(t, file, top, "type")
	if codegen.Kind(kind) != def.Kind {
		t.Errorf("%s: kind %q, definition has %q", file, kind, def.Kind)
	}
	key := -1
	if s, ok := str(t, file, top, "apiKey"); ok {
		fmt.Sscan(s, &key)
	}
	if key != def.APIKey {
		t.Errorf("%s: apiKey %d, definition has %d", file, key, def.APIKey)
	}
	s, ok := str(t, file, top, "validVersions")
	if v := versions(t, file, s, ok); v != def.Valid {
		t.Errorf("%s: validVersions %s, definition has %s", file, v, def.Valid)
	}
	s, ok = str(t, file, top, "flexibleVersions")
	if v := versions(t, file, s, ok); v != def.Flexible {
		t.Errorf("%s: flexibleVersions %s, definition has %s", file, v, def.Flexible)
	}
	commons := map[string]map[string]json.RawMessage{}
	var commonNames []string
	for _, c := range objects(t, file, top["commonStructs"]) {
		n, _ := str(t, file, c, "name")
		commons[n] = c
		commonNames = append(commonNames, n)
	}
	var defCommon []string
	for _, c := range def.Common {
		defCommon = append(defCommon, c.Name)
	}
	if !slices.Equal(commonNames, defCommon) {
		t.Errorf("%s: commonStructs %v, definition has %v", file, commonNames, defCommon)
	}
	for _, c := range def.Common {
		js := commons[c.Name]
		if js == nil {
			continue
		}
		where := file + " common " + c.Name
		for k := range js {
			if k != "name" && k != "versions" && k != "fields" {
				t.Errorf("%s: key %q not modelled", where, k)
			}
		}
		s, ok := str(t, where, js, "versions")
		if v := versions(t, where, s, ok); v != c.Versions {
			t.Errorf("%s: versions %s, definition has %s", where, v, c.Versions)
		}
		compareFields(t, where, objects(t, where, js["fields"]), c.Fields, commons)
	}
	compareFields(t, file, objects(t, file, top["fields"]), def.Fields, commons)
}

func compareFields(t *testing.T, where string, js []map[string]json.RawMessage, fs []*codegen.Field, commons map[string]map[string]json.RawMessage) {
	t.Helper()
	var jn, dn []string
	for _, j := range js {
		n, _ := str(t, where, j, "name")
		jn = append(jn, n)
	}
	for _, f := range fs {
		dn = append(dn, f.Name)
	}
	if !slices.Equal(jn, dn) {
		t.Errorf("%s: fields %v, definition has %v", where, jn, dn)
		return
	}
	for i, j := range js {
		f := fs[i]
		at := where + "." + f.Name
		for k := range j {
			switch k {
			case "name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
				"entityType", "mapKey", "ignorable", "about", "fields":
			default:
				t.Errorf("%s: key %q is not modelled by the definition format", at, k)
			}
		}
		typ, _ := str(t, at, j, "type")
		if typ != f.Type {
			t.Errorf("%s: type %s, definition has %s", at, typ, f.Type)
		}
		for _, vk := range []struct {
			key string
			got codegen.Versions
		}{{"versions", f.Versions}, {"nullableVersions", f.Nullable}, {"taggedVersions", f.Tagged}} {
			s, ok := str(t, at, j, vk.key)
			if v := versions(t, at, s, ok); v != vk.got {
				t.Errorf("%s: %s %s, definition has %s", at, vk.key, v, vk.got)
			}
		}
		tag := -1
		if s, ok := str(t, at, j, "tag"); ok {
			fmt.Sscan(s, &tag)
		}
		if tag != f.Tag {
			t.Errorf("%s: tag %d, definition has %d", at, tag, f.Tag)
		}
		d, ok := str(t, at, j, "default")
		if ok != f.HasDefault || d != f.Default {
			t.Errorf("%s: default %q (present %v), definition has %q (present %v)", at, d, ok, f.Default, f.HasDefault)
		}
		e, _ := str(t, at, j, "entityType")
		if e != f.Entity {
			t.Errorf("%s: entityType %q, definition has %q", at, e, f.Entity)
		}
		mk, _ := str(t, at, j, "mapKey")
		if (mk == "true") != f.MapKey {
			t.Errorf("%s: mapKey %q, definition has %v", at, mk, f.MapKey)
		}
		ig, _ := str(t, at, j, "ignorable")
		if (ig == "true") != f.Ignorable {
			t.Errorf("%s: ignorable %q, definition has %v", at, ig, f.Ignorable)
		}
		sub := objects(t, at, j["fields"])
		elem := strings.TrimPrefix(typ, "[]")
		switch {
		case sub != nil:
			if len(f.Fields) == 0 {
				t.Errorf("%s: inline structure in the schema, not in the definition", at)
				continue
			}
			compareFields(t, at, sub, f.Fields, commons)
		case len(f.Fields) > 0:
			t.Errorf("%s: inline structure in the definition, not in the schema", at)
		case !codegen.IsPrimitive(elem) && commons[elem] == nil:
			t.Errorf("%s: schema type %s is neither primitive nor a common structure", at, elem)
		}
	}
}

// TestPrivateRPCSchemas compares the definitions of the private RPCs in
// internal/wire/definitions, from which their codecs are generated, with
// the JSON schemas of docs/wire.md, the schemas' source of truth, field by
// field.
func TestPrivateRPCSchemas(t *testing.T) {
	doc, err := os.ReadFile("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	defs := loadDefs(t, "../wire/definitions")
	matched := map[string]bool{}
	rest := string(doc)
	for {
		_, block, ok := strings.Cut(rest, "```json\n")
		if !ok {
			break
		}
		block, rest, ok = strings.Cut(block, "```")
		if !ok {
			t.Fatal("docs/wire.md: unterminated json block")
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(stripComments([]byte(block)), &top); err != nil {
			t.Fatalf("docs/wire.md: %v\n%s", err, block)
		}
		name, _ := str(t, "docs/wire.md", top, "name")
		def := defs[name]
		if def == nil {
			t.Errorf("docs/wire.md: schema %s has no definition in internal/wire/definitions", name)
			continue
		}
		matched[name] = true
		t.Run(name, func(t *testing.T) { compareMessage(t, "docs/wire.md "+name, top, def) })
	}
	if len(matched) != 6 {
		t.Errorf("docs/wire.md has schemas of %d definitions, want the 6 private messages", len(matched))
	}
	for name, m := range defs {
		if !matched[name] {
			t.Errorf("%s: definition %s has no schema in docs/wire.md", m.Pos, name)
		}
	}
}
