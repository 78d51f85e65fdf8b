package raft

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The value syntaxes of server.properties: numbers, lists, maps,
// listeners, host:port pairs and voters, read as Kafka's ConfigDef types
// and written back the same way.

func parseInt32(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, errors.New("must be a 32-bit integer")
	}
	return int32(n), nil
}

func parseInt64(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errors.New("must be a 64-bit integer")
	}
	return n, nil
}

// splitList splits a Kafka LIST value: comma-separated, each entry
// trimmed, nil for an empty value. An empty entry is an error, as Kafka's
// validators reject it.
func splitList(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	entries := strings.Split(v, ",")
	for i, e := range entries {
		entries[i] = strings.TrimSpace(e)
		if entries[i] == "" {
			return nil, errors.New("empty entry in comma-separated list")
		}
	}
	return entries, nil
}

// splitCSV splits a comma-separated value the way Kafka reads listeners
// and log.dirs: entries trimmed, empty entries dropped.
func splitCSV(v string) []string {
	var out []string
	for e := range strings.SplitSeq(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// listenerSyntax is Kafka's listener syntax NAME://host:port, the host
// optionally in brackets (SocketServerConfigs.URI_PARSE_REGEXP).
var listenerSyntax = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// hostPortSyntax is Kafka's host:port syntax, the host optionally in
// brackets (Utils.HOST_PORT_PATTERN).
var hostPortSyntax = regexp.MustCompile(`^(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$`)

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || n > math.MaxUint16 {
		return 0, fmt.Errorf("port %s is out of range 0-65535", s)
	}
	return uint16(n), nil
}

func parseEndpoints(v string) ([]Endpoint, error) {
	var out []Endpoint
	for _, entry := range splitCSV(v) {
		m := listenerSyntax.FindStringSubmatch(entry)
		if m == nil {
			return nil, fmt.Errorf("cannot read listener %q; write NAME://host:port, such as CONTROLLER://:9093 or CONTROLLER://[::1]:9093", entry)
		}
		port, err := parsePort(m[3])
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", entry, err)
		}
		out = append(out, Endpoint{Name: strings.ToUpper(m[1]), Host: m[2], Port: port})
	}
	return out, nil
}

func parseHostPort(entry string) (HostPort, error) {
	m := hostPortSyntax.FindStringSubmatch(entry)
	if m == nil {
		return HostPort{}, fmt.Errorf("cannot read %q as host:port", entry)
	}
	port, err := parsePort(m[2])
	if err != nil {
		return HostPort{}, fmt.Errorf("%q: %w", entry, err)
	}
	return HostPort{Host: m[1], Port: port}, nil
}

func parseHostPorts(v string) ([]HostPort, error) {
	entries, err := splitList(v)
	if err != nil {
		return nil, err
	}
	var out []HostPort
	for _, e := range entries {
		hp, err := parseHostPort(e)
		if err != nil {
			return nil, fmt.Errorf("%w; each entry must be {host}:{port}", err)
		}
		out = append(out, hp)
	}
	return out, nil
}

func parseVoters(v string) ([]QuorumVoter, error) {
	entries, err := splitList(v)
	if err != nil {
		return nil, err
	}
	const form = "each entry must be {id}@{host}:{port}, such as 1@controller-1:9093"
	var out []QuorumVoter
	for _, e := range entries {
		id, addr, ok := strings.Cut(e, "@")
		if !ok || strings.Contains(addr, "@") {
			return nil, fmt.Errorf("cannot read voter %q; %s", e, form)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("voter %q: id %q is not a 32-bit integer; %s", e, id, form)
		}
		hp, err := parseHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("voter %q: %w; %s", e, err, form)
		}
		out = append(out, QuorumVoter{ID: NodeID(n), Host: hp.Host, Port: hp.Port})
	}
	return out, nil
}

// splitMap reads Kafka's comma-separated key:value map, splitting each
// entry at its last colon so that IPv6 keys work (Csv.parseCsvMap).
func splitMap(v string) ([][2]string, error) {
	var out [][2]string
	for _, e := range splitCSV(v) {
		i := strings.LastIndexByte(e, ':')
		if i < 0 {
			return nil, fmt.Errorf("cannot read entry %q; write key:value", e)
		}
		out = append(out, [2]string{strings.TrimSpace(e[:i]), strings.TrimSpace(e[i+1:])})
	}
	return out, nil
}

func parseProtocolMap(v string) (map[string]SecurityProtocol, error) {
	entries, err := splitMap(v)
	if err != nil {
		return nil, err
	}
	m := make(map[string]SecurityProtocol, len(entries))
	for _, kv := range entries {
		p, ok := protocolByName(kv[1])
		if !ok {
			return nil, fmt.Errorf("listener %s: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", kv[0], kv[1])
		}
		m[strings.ToUpper(kv[0])] = p
	}
	return m, nil
}

func protocolByName(name string) (SecurityProtocol, bool) {
	for _, p := range securityProtocols {
		if strings.EqualFold(p.String(), name) {
			return p, true
		}
	}
	return 0, false
}

func parseOverrides(v string) (map[string]int32, error) {
	entries, err := splitMap(v)
	if err != nil {
		return nil, err
	}
	var m map[string]int32
	for _, kv := range entries {
		n, err := strconv.ParseInt(kv[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("limit %q for %s is not a 32-bit integer", kv[1], kv[0])
		}
		if m == nil {
			m = map[string]int32{}
		}
		m[kv[0]] = int32(n)
	}
	return m, nil
}

// effectiveProtocolMap returns the map [Config.ListenerSecurityProtocol]
// consults.
func (c Config) effectiveProtocolMap() map[string]SecurityProtocol {
	if c.ListenerSecurityProtocolMap != nil {
		return c.ListenerSecurityProtocolMap
	}
	m := map[string]SecurityProtocol{}
	for _, p := range securityProtocols {
		m[p.String()] = p
	}
	for _, n := range c.ControllerListenerNames {
		if p, ok := c.ListenerSecurityProtocol(n); ok {
			m[strings.ToUpper(n)] = p
		}
	}
	return m
}

func formatRoles(roles []ProcessRole) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = r.String()
	}
	return strings.Join(s, ",")
}

func formatEndpoints(eps []Endpoint) string {
	s := make([]string, len(eps))
	for i, e := range eps {
		s[i] = e.String()
	}
	return strings.Join(s, ",")
}

func formatVoters(voters []QuorumVoter) string {
	s := make([]string, len(voters))
	for i, v := range voters {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

func formatHostPorts(hps []HostPort) string {
	s := make([]string, len(hps))
	for i, h := range hps {
		s[i] = h.String()
	}
	return strings.Join(s, ",")
}

func formatProtocolMap(m map[string]SecurityProtocol) string {
	s := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		s = append(s, k+":"+m[k].String())
	}
	return strings.Join(s, ",")
}

func formatOverrides(m map[string]int32) string {
	s := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		s = append(s, k+":"+strconv.FormatInt(int64(m[k]), 10))
	}
	return strings.Join(s, ",")
}

func formatMillis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// parseIP parses a literal IP address, without brackets or zone.
func parseIP(host string) (netip.Addr, error) { return netip.ParseAddr(host) }
