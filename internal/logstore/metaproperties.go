package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// MetaPropertiesFileName is the name of the file kafka-storage format
// writes at the root of every log directory.
const MetaPropertiesFileName = "meta.properties"

// maxMetaPropertiesBytes bounds what ReadMetaProperties reads.
const maxMetaPropertiesBytes = 64 << 10

// MetaProperties is the content of meta.properties (Kafka's MetaProperties):
// which cluster and node a log directory belongs to.
type MetaProperties struct {
	// Version is 1 for KRaft directories; 0 is the ZooKeeper-era form,
	// which names the node "broker.id".
	Version int
	// ClusterID is cluster.id. Kafka does not check its form: samples hold
	// 22-character base64 Uuids, a 36-character textual UUID and arbitrary
	// 20-character strings.
	ClusterID string
	// NodeID is node.id (broker.id in version 0); -1 when absent, which only
	// version 0 allows.
	NodeID kraft.NodeID
	// DirectoryID is directory.id (Kafka 3.7+); zero when absent.
	DirectoryID kraft.UUID
	// Other holds every other key, kept so that a rewrite loses nothing.
	Other map[string]string
}

// ReadMetaProperties reads dir/meta.properties. A missing file returns an
// error that wraps fs.ErrNotExist (an unformatted directory).
func ReadMetaProperties(fsys vfs.FS, dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFileName)
	data, err := readSmallFile(fsys, path, maxMetaPropertiesBytes)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("logstore: read meta.properties %s: %w", path, err)
	}
	mp, err := ParseMetaProperties(data)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("logstore: read meta.properties %s: %w", path, err)
	}
	return mp, nil
}

// WriteMetaProperties replaces dir/meta.properties atomically
// (meta.properties.tmp, fsync, rename, fsync of dir), as Kafka's
// PropertiesUtils.writePropertiesFile does. now is the time written in the
// second comment line, in the form of Java's Date.toString.
func WriteMetaProperties(fsys vfs.FS, dir string, mp MetaProperties, now time.Time) error {
	data, err := mp.Encode(now)
	if err != nil {
		return err
	}
	return writeFileAtomic(fsys, filepath.Join(dir, MetaPropertiesFileName), data)
}

// Encode renders mp as Java's Properties.store does for a null comment: a
// "#" line, a "#<date>" line, then key=value lines. Keys are written in
// sorted order, as Kafka 4.x does (older versions wrote hash order, which
// readers must not depend on).
func (mp MetaProperties) Encode(now time.Time) ([]byte, error) {
	props, err := mp.properties()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	b.WriteString("#\n#")
	b.WriteString(now.UTC().Format("Mon Jan 02 15:04:05 MST 2006"))
	b.WriteByte('\n')
	for _, k := range keys {
		b.WriteString(EscapeProperty(k, true))
		b.WriteByte('=')
		b.WriteString(EscapeProperty(props[k], false))
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func (mp MetaProperties) properties() (map[string]string, error) {
	props := make(map[string]string, len(mp.Other)+4)
	for k, v := range mp.Other {
		props[k] = v
	}
	switch mp.Version {
	case 0:
		if mp.NodeID >= 0 {
			props["broker.id"] = strconv.Itoa(int(mp.NodeID))
		}
	case 1:
		if mp.ClusterID == "" {
			return nil, errors.New("logstore: encode meta.properties: version 1 needs cluster.id")
		}
		if mp.NodeID < 0 {
			return nil, fmt.Errorf("logstore: encode meta.properties: version 1 needs node.id >= 0, got %d", mp.NodeID)
		}
		props["node.id"] = strconv.Itoa(int(mp.NodeID))
	default:
		return nil, fmt.Errorf("logstore: encode meta.properties: unsupported version %d", mp.Version)
	}
	props["version"] = strconv.Itoa(mp.Version)
	if mp.ClusterID != "" {
		props["cluster.id"] = mp.ClusterID
	}
	if !mp.DirectoryID.IsZero() {
		props["directory.id"] = mp.DirectoryID.String()
	}
	return props, nil
}

// ParseMetaProperties parses the Java-properties text of meta.properties
// and checks it as MetaProperties does: version 0 or 1; version 1 needs
// cluster.id and node.id; directory.id, when present, is a Uuid.
func ParseMetaProperties(data []byte) (MetaProperties, error) {
	props, err := parseProperties(data)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("parse meta.properties: %w", err)
	}
	mp := MetaProperties{NodeID: -1, Other: map[string]string{}}
	vs, ok := props["version"]
	if !ok {
		return MetaProperties{}, errors.New("parse meta.properties: missing version")
	}
	v, err := strconv.Atoi(vs)
	if err != nil || (v != 0 && v != 1) {
		return MetaProperties{}, fmt.Errorf("parse meta.properties: unsupported version %q", vs)
	}
	mp.Version = v
	idKey := "node.id"
	if v == 0 {
		idKey = "broker.id"
		if _, ok := props[idKey]; !ok {
			idKey = "node.id"
		}
	}
	if s, ok := props[idKey]; ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return MetaProperties{}, fmt.Errorf("parse meta.properties: %s %q is not a node id", idKey, s)
		}
		mp.NodeID = kraft.NodeID(n)
	} else if v == 1 {
		return MetaProperties{}, errors.New("parse meta.properties: version 1 needs node.id")
	}
	cid, ok := props["cluster.id"]
	if !ok && v == 1 {
		return MetaProperties{}, errors.New("parse meta.properties: version 1 needs cluster.id")
	}
	mp.ClusterID = cid
	if s, ok := props["directory.id"]; ok {
		if mp.DirectoryID, err = kraft.ParseUUID(s); err != nil {
			return MetaProperties{}, fmt.Errorf("parse meta.properties: directory.id: %w", err)
		}
	}
	for k, val := range props {
		switch k {
		case "version", "cluster.id", "directory.id", idKey:
		default:
			mp.Other[k] = val
		}
	}
	return mp, nil
}

// parseProperties reads the subset of java.util.Properties text that
// Kafka writes: comment lines starting with '#' or '!', blank lines, and
// key=value or key:value lines with backslash escapes and line
// continuations.
func parseProperties(data []byte) (map[string]string, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	props := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(strings.TrimRight(lines[i], "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// A line ending in an odd number of backslashes continues.
		for endsWithEscape(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(strings.TrimRight(lines[i], "\r"), " \t\f")
		}
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		props[k] = v
	}
	return props, nil
}

func endsWithEscape(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// whitespace, skipping whitespace around the separator.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 >= len(s) {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errors.New(`malformed \uXXXX escape`)
			}
			i += 4
			if utf16.IsSurrogate(rune(r)) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if r2, err := strconv.ParseUint(s[i+3:i+7], 16, 16); err == nil {
					if d := utf16.DecodeRune(rune(r), rune(r2)); d != utf8.RuneError {
						b.WriteRune(d)
						i += 6
						continue
					}
				}
			}
			b.WriteRune(rune(r))
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// EscapeProperty escapes s as Properties.store does, so that a Java
// properties reader reads it back unchanged: a key (key true) escapes its
// spaces, a value only a leading one.
func EscapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e:
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				fmt.Fprintf(&b, `\u%04X\u%04X`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
