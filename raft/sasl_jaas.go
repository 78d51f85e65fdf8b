package raft

import (
	"errors"
	"fmt"
	"strings"
)

// The login module classes of Kafka's PLAIN and SCRAM mechanisms.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// plainJAAS is what a PlainLoginModule or ScramLoginModule entry holds:
// the credentials this node authenticates with (username, password) and,
// for PLAIN only, the users it accepts (user_<name>="<password>").
type plainJAAS struct {
	username, password string
	hasUsername        bool
	users              map[string]string
}

// parsePlainJAAS reads one PlainLoginModule entry; see parseJAAS.
func parsePlainJAAS(s string) (plainJAAS, error) { return parseJAAS(s, plainLoginModule) }

// parseScramJAAS reads one ScramLoginModule entry; see parseJAAS. Its
// users come from the metadata image, so it has no user_ options.
func parseScramJAAS(s string) (plainJAAS, error) { return parseJAAS(s, scramLoginModule) }

// parseJAAS reads one login module entry of class in Kafka's JAAS syntax
// (JaasConfig): `<class> <flag> key="value" ... ;`. It is strict: the
// class must be the given one, the flag one of required, requisite,
// sufficient or optional, every value double-quoted (with \" and \\ the
// only escapes), no option twice, and nothing after the semicolon. Its
// errors name option keys, never values.
func parseJAAS(s, class string) (plainJAAS, error) {
	p := jaasScanner{s: s}
	if got := p.word(); got != class {
		return plainJAAS{}, fmt.Errorf("the login module must be %s", class)
	}
	switch flag := strings.ToLower(p.word()); flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return plainJAAS{}, errors.New("the login module's control flag must follow its class: required, requisite, sufficient or optional")
	}
	j := plainJAAS{users: map[string]string{}}
	seen := map[string]bool{}
	for {
		p.space()
		if p.peek() == ';' {
			p.i++
			break
		}
		key := p.word()
		if key == "" {
			return plainJAAS{}, fmt.Errorf("expected an option (key=\"value\") or the closing ';' at byte %d", p.i)
		}
		if seen[key] {
			return plainJAAS{}, fmt.Errorf("option %s is given twice", key)
		}
		seen[key] = true
		p.space()
		if p.peek() != '=' {
			return plainJAAS{}, fmt.Errorf("option %s has no '='", key)
		}
		p.i++
		p.space()
		value, ok := p.quoted()
		if !ok {
			return plainJAAS{}, fmt.Errorf("the value of option %s must be a double-quoted string, with \\\" and \\\\ the only escapes", key)
		}
		switch {
		case key == "username":
			j.username, j.hasUsername = value, true
		case key == "password":
			j.password = value
		case class == plainLoginModule && strings.HasPrefix(key, "user_"):
			if key == "user_" {
				return plainJAAS{}, errors.New("option user_ names no user")
			}
			j.users[strings.TrimPrefix(key, "user_")] = value
		case class == plainLoginModule:
			return plainJAAS{}, fmt.Errorf("option %s is not one PlainLoginModule reads (username, password, user_<name>)", key)
		default:
			return plainJAAS{}, fmt.Errorf("option %s is not one ScramLoginModule reads as Krabka implements it (username, password; tokenauth needs delegation tokens, which are not implemented)", key)
		}
	}
	p.space()
	if p.i != len(s) {
		return plainJAAS{}, errors.New("the configuration holds more than one login module entry, or text after the closing ';'")
	}
	return j, nil
}

// jaasScanner walks a JAAS entry.
type jaasScanner struct {
	s string
	i int
}

func (p *jaasScanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *jaasScanner) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// word reads a class name, a flag or an option key.
func (p *jaasScanner) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '$' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

// quoted reads a double-quoted string.
func (p *jaasScanner) quoted() (string, bool) {
	if p.peek() != '"' {
		return "", false
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), true
		case '\\':
			if p.i == len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}
