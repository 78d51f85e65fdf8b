package codegen

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// ParseError reports a problem in a definition file.
type ParseError struct {
	// Pos is file:line.
	Pos string
	// Msg describes the problem.
	Msg string
}

// Error implements error.
func (e *ParseError) Error() string { return "codegen: " + e.Pos + ": " + e.Msg }

// ParseDir parses every *.def file in dir, sorted by file name.
func ParseDir(dir string) ([]*Message, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.def"))
	if err != nil {
		return nil, fmt.Errorf("codegen: list %s: %w", dir, err)
	}
	slices.Sort(names)
	var out []*Message
	seen := map[string]string{}
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("codegen: read definition: %w", err)
		}
		m, err := Parse(filepath.Base(name), string(src))
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[m.Name]; ok {
			return nil, &ParseError{Pos: m.Pos, Msg: fmt.Sprintf("message %s already defined at %s", m.Name, prev)}
		}
		seen[m.Name] = m.Pos
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("codegen: no *.def files in %s", dir)
	}
	return out, nil
}

// container is something that holds fields while parsing.
type container struct {
	fields *[]*Field
	pos    string
	what   string
}

type parser struct {
	file  string
	line  int
	msg   *Message
	stack []container
	// about is where the next "about" line goes, nil when none may.
	about *string
}

func (p *parser) errf(format string, args ...any) error {
	return &ParseError{Pos: fmt.Sprintf("%s:%d", p.file, p.line), Msg: fmt.Sprintf(format, args...)}
}

// Parse parses the definition text src; name is used in error positions.
func Parse(name, src string) (*Message, error) {
	p := &parser{file: name}
	for i, raw := range strings.Split(src, "\n") {
		p.line = i + 1
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := p.directive(line); err != nil {
			return nil, err
		}
	}
	if p.msg == nil {
		return nil, &ParseError{Pos: name, Msg: "no message directive"}
	}
	if len(p.stack) > 1 {
		top := p.stack[len(p.stack)-1]
		return nil, &ParseError{Pos: top.pos, Msg: top.what + " is not closed with }"}
	}
	if err := validate(p.msg); err != nil {
		return nil, err
	}
	return p.msg, nil
}

func (p *parser) directive(line string) error {
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	if p.msg == nil && word != "message" {
		return p.errf("the first directive must be message, not %q", word)
	}
	switch word {
	case "message":
		if p.msg != nil {
			return p.errf("only one message per file")
		}
		if !isIdent(rest) {
			return p.errf("message needs a name, got %q", rest)
		}
		p.msg = &Message{Name: rest, APIKey: -1, Pos: fmt.Sprintf("%s:%d", p.file, p.line)}
		p.stack = []container{{fields: &p.msg.Fields, pos: p.msg.Pos, what: "message"}}
		p.about = &p.msg.About
		return nil
	case "kind", "apikey", "versions", "flexible":
		return p.header(word, rest)
	case "about":
		if p.about == nil {
			return p.errf("about must follow a message, field or common line")
		}
		if *p.about != "" {
			*p.about += " "
		}
		*p.about += rest
		return nil
	case "field":
		return p.field(rest)
	case "common":
		return p.common(rest)
	case "}":
		if rest != "" {
			return p.errf("unexpected text after }")
		}
		if len(p.stack) <= 1 {
			return p.errf("} without an open {")
		}
		p.stack = p.stack[:len(p.stack)-1]
		p.about = nil
		return nil
	}
	return p.errf("unknown directive %q", word)
}

func (p *parser) header(word, rest string) error {
	if len(p.msg.Fields) > 0 || len(p.msg.Common) > 0 || len(p.stack) > 1 {
		return p.errf("%s must come before the first field", word)
	}
	var err error
	switch word {
	case "kind":
		switch Kind(rest) {
		case KindMetadata, KindData, KindRequest, KindResponse:
			p.msg.Kind = Kind(rest)
		default:
			return p.errf("kind must be metadata, data, request or response, got %q", rest)
		}
	case "apikey":
		n, perr := strconv.ParseInt(rest, 10, 16)
		if perr != nil || n < 0 {
			return p.errf("bad apikey %q", rest)
		}
		p.msg.APIKey = int(n)
	case "versions":
		p.msg.Valid, err = ParseVersions(rest)
	case "flexible":
		p.msg.Flexible, err = ParseVersions(rest)
	}
	if err != nil {
		return p.errf("%s: %v", word, err)
	}
	p.about = &p.msg.About
	return nil
}

func (p *parser) common(rest string) error {
	if len(p.stack) != 1 {
		return p.errf("common must be at the top level")
	}
	toks, err := tokenize(rest)
	if err != nil {
		return p.errf("%v", err)
	}
	if len(toks) < 2 || toks[len(toks)-1] != "{" || !isIdent(toks[0]) {
		return p.errf("want: common <Name> versions=<range> {")
	}
	s := &Struct{Name: toks[0], Pos: fmt.Sprintf("%s:%d", p.file, p.line)}
	sawVersions := false
	for _, t := range toks[1 : len(toks)-1] {
		k, v, _ := strings.Cut(t, "=")
		if k != "versions" {
			return p.errf("common accepts only versions=, got %q", t)
		}
		if s.Versions, err = ParseVersions(v); err != nil {
			return p.errf("versions: %v", err)
		}
		sawVersions = true
	}
	if !sawVersions {
		return p.errf("common %s needs versions=", s.Name)
	}
	p.msg.Common = append(p.msg.Common, s)
	p.stack = append(p.stack, container{fields: &s.Fields, pos: s.Pos, what: "common " + s.Name})
	p.about = &s.About
	return nil
}

func (p *parser) field(rest string) error {
	toks, err := tokenize(rest)
	if err != nil {
		return p.errf("%v", err)
	}
	if len(toks) < 2 {
		return p.errf("want: field <Name> <type> versions=<range> [attributes] [{]")
	}
	f := &Field{Name: toks[0], Type: toks[1], Tag: -1, Pos: fmt.Sprintf("%s:%d", p.file, p.line)}
	if !isIdent(f.Name) {
		return p.errf("bad field name %q", f.Name)
	}
	open := false
	attrs := toks[2:]
	if n := len(attrs); n > 0 && attrs[n-1] == "{" {
		open = true
		attrs = attrs[:n-1]
	}
	seen := map[string]bool{}
	for _, a := range attrs {
		k, v, hasValue := strings.Cut(a, "=")
		if seen[k] {
			return p.errf("attribute %s repeated", k)
		}
		seen[k] = true
		switch k {
		case "mapkey", "ignorable":
			if hasValue {
				return p.errf("%s takes no value", k)
			}
			if k == "mapkey" {
				f.MapKey = true
			} else {
				f.Ignorable = true
			}
			continue
		}
		if !hasValue {
			return p.errf("attribute %s needs a value", k)
		}
		switch k {
		case "versions":
			f.Versions, err = ParseVersions(v)
		case "nullable":
			f.Nullable, err = ParseVersions(v)
		case "tagged":
			f.Tagged, err = ParseVersions(v)
		case "tag":
			n, perr := strconv.ParseInt(v, 10, 32)
			if perr != nil || n < 0 {
				return p.errf("bad tag %q", v)
			}
			f.Tag = int(n)
		case "default":
			f.Default, f.HasDefault = v, true
			if strings.HasPrefix(v, `"`) {
				if f.Default, err = strconv.Unquote(v); err != nil {
					return p.errf("default: bad quoted string %s", v)
				}
			}
		case "entity":
			f.Entity = v
		case "inline":
			n, perr := strconv.ParseInt(v, 10, 8)
			if perr != nil || n < 1 {
				return p.errf("bad inline %q (want 1 to 127)", v)
			}
			f.Inline = int(n)
		default:
			return p.errf("unknown attribute %q", k)
		}
		if err != nil {
			return p.errf("%s: %v", k, err)
		}
	}
	if !seen["versions"] {
		return p.errf("field %s needs versions=", f.Name)
	}
	top := p.stack[len(p.stack)-1]
	*top.fields = append(*top.fields, f)
	p.about = &f.About
	if open {
		if IsPrimitive(f.Elem()) {
			return p.errf("field %s of primitive type %s cannot have { fields }", f.Name, f.Type)
		}
		p.stack = append(p.stack, container{fields: &f.Fields, pos: f.Pos, what: "field " + f.Name})
	}
	return nil
}

// tokenize splits on spaces, keeping double-quoted values (Go syntax)
// together.
func tokenize(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out, nil
		}
		end := 0
		for end < len(s) && s[end] != ' ' && s[end] != '\t' {
			if s[end] == '"' {
				q, err := strconv.QuotedPrefix(s[end:])
				if err != nil {
					return nil, errors.New("unterminated quoted string")
				}
				end += len(q)
				continue
			}
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(unicode.IsLetter(r) || r == '_' || (i > 0 && unicode.IsDigit(r))) || r > unicode.MaxASCII {
			return false
		}
	}
	return unicode.IsUpper(rune(s[0]))
}

// validate checks the rules that do not depend on syntax.
func validate(m *Message) error {
	bad := func(pos, format string, args ...any) error {
		return &ParseError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	if m.Kind == "" {
		return bad(m.Pos, "message %s needs kind", m.Name)
	}
	if !m.Valid.Set {
		return bad(m.Pos, "message %s needs versions", m.Name)
	}
	if m.Valid.Open() {
		return bad(m.Pos, "message versions must be closed (N or N-M)")
	}
	if m.Flexible.Set && !m.Flexible.Open() {
		return bad(m.Pos, "flexible versions must be none or open (N+)")
	}
	if m.Kind.HasAPIKey() && m.APIKey < 0 {
		return bad(m.Pos, "apikey is required for kind %s", m.Kind)
	}
	if !m.Kind.HasAPIKey() && m.APIKey >= 0 {
		return bad(m.Pos, "apikey is required for kind metadata and not allowed for kind %s", m.Kind)
	}
	if m.Kind.IsRPC() && !m.Flexible.Covers(m.Valid) {
		return bad(m.Pos, "every version of a message of kind %s must be flexible", m.Kind)
	}
	if want := map[Kind]string{KindRequest: "Request", KindResponse: "Response"}[m.Kind]; want != "" && !strings.HasSuffix(m.Name, want) {
		return bad(m.Pos, "a message of kind %s must be named <RPC>%s", m.Kind, want)
	}
	structs := map[string]*Struct{}
	for _, s := range m.Common {
		if structs[s.Name] != nil {
			return bad(s.Pos, "common %s defined twice", s.Name)
		}
		structs[s.Name] = s
	}
	named := map[string]string{m.Name: m.Pos}
	var walk func(fields []*Field, scope Versions, inStructArray, top bool) error
	walk = func(fields []*Field, scope Versions, inStructArray, top bool) error {
		names := map[string]bool{}
		tags := map[int]string{}
		for _, f := range fields {
			if names[f.Name] {
				return bad(f.Pos, "field %s defined twice", f.Name)
			}
			names[f.Name] = true
			if top && (m.Kind == KindMetadata || m.Kind.IsRPC()) && f.Name == "Version" {
				return bad(f.Pos, "a message of kind %s cannot have a field named Version (it holds the message version)", m.Kind)
			}
			if m.Kind.IsRPC() {
				switch f.Name {
				case "Key", "IsFlexible", "ReadFrom", "ResponseKind", "RequestKind":
					return bad(f.Pos, "field name %s is reserved (a generated method of kind %s)", f.Name, m.Kind)
				}
				if f.Tagged.Set {
					return bad(f.Pos, "field %s: a message of kind %s has no tagged fields (its decoder skips every tag)", f.Name, m.Kind)
				}
			}
			if f.Inline > 0 && !f.IsArray() {
				return bad(f.Pos, "field %s: inline= is only for arrays", f.Name)
			}
			switch f.Name {
			case "UnknownTags", "Default", "AppendTo", "DecodeFrom", "MinVersion", "MaxVersion",
				"APIKey", "GetVersion", "SetVersion", "ControlType":
				return bad(f.Pos, "field name %s is reserved (a generated field or method)", f.Name)
			}
			elem := f.Elem()
			if strings.HasPrefix(elem, "[]") {
				return bad(f.Pos, "arrays of arrays are not supported")
			}
			if !f.Versions.Set {
				return bad(f.Pos, "field %s: versions must not be none", f.Name)
			}
			if !scope.Intersect(f.Versions).Set {
				return bad(f.Pos, "field %s: versions %s outside the message's versions %s", f.Name, f.Versions, scope)
			}
			if f.Nullable.Set {
				if !f.CanBeNull() {
					return bad(f.Pos, "field %s of type %s cannot be nullable", f.Name, f.Type)
				}
				if !f.Versions.Covers(f.Versions.Intersect(f.Nullable)) || !f.Versions.Intersect(f.Nullable).Set {
					return bad(f.Pos, "field %s: nullable versions %s outside its versions %s", f.Name, f.Nullable, f.Versions)
				}
			}
			if f.Tagged.Set != (f.Tag >= 0) {
				return bad(f.Pos, "field %s: tagged= and tag= go together", f.Name)
			}
			if f.Tagged.Set {
				if !f.Versions.Covers(f.Tagged) {
					return bad(f.Pos, "field %s: tagged versions %s outside its versions %s", f.Name, f.Tagged, f.Versions)
				}
				if !m.Flexible.Covers(f.Tagged.Intersect(m.Valid)) {
					return bad(f.Pos, "field %s: tagged versions %s are not all flexible (%s)", f.Name, f.Tagged, m.Flexible)
				}
				if prev, ok := tags[f.Tag]; ok {
					return bad(f.Pos, "tag %d used by %s and %s", f.Tag, prev, f.Name)
				}
				tags[f.Tag] = f.Name
			}
			if f.MapKey && !inStructArray {
				return bad(f.Pos, "mapkey is only allowed in a structure inside an array")
			}
			if f.IsStruct() {
				if f.HasDefault {
					return bad(f.Pos, "structure field %s cannot have a default", f.Name)
				}
				if len(f.Fields) > 0 {
					if structs[elem] != nil {
						return bad(f.Pos, "structure %s is both common and inline", elem)
					}
					if p, ok := named[elem]; ok {
						return bad(f.Pos, "structure name %s already used at %s", elem, p)
					}
					named[elem] = f.Pos
					if err := walk(f.Fields, scope.Intersect(f.Versions), f.IsArray(), false); err != nil {
						return err
					}
				} else if structs[elem] == nil {
					return bad(f.Pos, "field %s: unknown type %s", f.Name, elem)
				}
			} else if f.HasDefault {
				if err := checkDefault(f); err != nil {
					return bad(f.Pos, "field %s: %v", f.Name, err)
				}
			}
		}
		return nil
	}
	if err := walk(m.Fields, m.Valid, false, true); err != nil {
		return err
	}
	for _, s := range m.Common {
		if p, ok := named[s.Name]; ok {
			return bad(s.Pos, "structure name %s already used at %s", s.Name, p)
		}
		named[s.Name] = s.Pos
		if err := walk(s.Fields, m.Valid.Intersect(s.Versions), true, false); err != nil {
			return err
		}
	}
	return nil
}

// ParseInt parses an integer default: decimal, negative, or 0x-prefixed
// hexadecimal.
func ParseInt(s string, bits int) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	var (
		u   uint64
		err error
	)
	if h, ok := strings.CutPrefix(strings.ToLower(body), "0x"); ok {
		u, err = strconv.ParseUint(h, 16, 64)
	} else {
		u, err = strconv.ParseUint(body, 10, 64)
	}
	if err != nil {
		return 0, fmt.Errorf("bad integer %q", s)
	}
	var v int64
	if neg {
		if u > 1<<63 {
			return 0, fmt.Errorf("integer %q out of range", s)
		}
		v = -int64(u)
	} else {
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("integer %q out of range", s)
		}
		v = int64(u)
	}
	lo, hi := -int64(1)<<(bits-1), int64(1)<<(bits-1)-1
	if v < lo || v > hi {
		return 0, fmt.Errorf("integer %q out of range for int%d", s, bits)
	}
	return v, nil
}

func checkDefault(f *Field) error {
	d := f.Default
	if d == "null" {
		if !f.Nullable.Set {
			return errors.New("default null needs nullable versions")
		}
		return nil
	}
	if f.IsArray() {
		return fmt.Errorf("array default must be null, got %q", d)
	}
	var err error
	switch f.Type {
	case "bool":
		if d != "true" && d != "false" {
			err = fmt.Errorf("bool default must be true or false, got %q", d)
		}
	case "int8":
		_, err = ParseInt(d, 8)
	case "int16":
		_, err = ParseInt(d, 16)
	case "int32":
		_, err = ParseInt(d, 32)
	case "int64":
		_, err = ParseInt(d, 64)
	case "uint16":
		var v int64
		v, err = ParseInt(d, 64)
		if err == nil && (v < 0 || v > math.MaxUint16) {
			err = fmt.Errorf("uint16 default %q out of range", d)
		}
	case "float64":
		_, err = strconv.ParseFloat(d, 64)
	case "string":
	case "bytes", "records", "uuid":
		err = fmt.Errorf("type %s accepts only the default null", f.Type)
	}
	return err
}
