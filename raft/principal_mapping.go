package raft

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// keySSLPrincipalMappingRules is Kafka's ssl.principal.mapping.rules
// (BrokerSecurityConfigs): how the subject of an SSL client's
// certificate becomes its principal's name.
const keySSLPrincipalMappingRules = "ssl.principal.mapping.rules"

// principalMapper maps the distinguished name of an SSL client's
// certificate (RFC 2253) to its principal's name, as Kafka's
// SslPrincipalMapper does: the rules are tried in order and the first
// that matches names the principal; a name no rule matches is refused,
// and the connection with it.
type principalMapper struct {
	rules []mappingRule
}

// mappingRule is one rule: DEFAULT (the name unchanged), or
// RULE:pattern/replacement/[LU].
type mappingRule struct {
	isDefault   bool
	pattern     *regexp.Regexp
	whole       *regexp.Regexp // pattern, anchored at both ends
	replacement string
	lower       bool
	upper       bool
	text        string // as written, for errors
}

// errNoMappingRule: no rule of ssl.principal.mapping.rules matches a
// certificate's subject (Kafka's NoMatchingRule).
var errNoMappingRule = errors.New("no rule of ssl.principal.mapping.rules applies")

// parsePrincipalMappingRules reads ssl.principal.mapping.rules as
// Kafka's SslPrincipalMapper splits and parses it: rules separated by
// commas with white space around them, each DEFAULT or
// RULE:pattern/replacement/ followed by an optional L (lower case) or U
// (upper case); a / or \ inside a pattern or replacement is escaped with
// \ (the escape stays part of the text); empty rules are skipped.
//
// Patterns are Go's regular expressions (RE2), whose syntax is Java's
// for the classes, groups, anchors and repetitions rules use. A pattern
// Go cannot compile (look-around, back-references, possessive
// repetition), one whose meaning would differ (Java's class intersection
// &&), and one that can match an empty string other than at the start of
// the name (where Java's replaceAll repeats the replacement and Go's
// does not) are refused. A list without any rule is Kafka's too: the
// node starts, and every client certificate is refused as one no rule
// matches.
func parsePrincipalMappingRules(value string) (*principalMapper, error) {
	m := &principalMapper{}
	for _, text := range splitMappingRules(strings.TrimSpace(value)) {
		r, err := parseMappingRule(text)
		if err != nil {
			return nil, err
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// splitMappingRules returns the rules of s, trimmed, without the empty
// ones. A comma ends a rule except inside a RULE's pattern or
// replacement, where it is part of the text; after a RULE's last /
// everything up to the next comma belongs to the rule, so that a flag
// Kafka does not take ("/L/U", "/LU") is refused rather than split off.
func splitMappingRules(s string) []string {
	var out []string
	for len(s) > 0 {
		var rule string
		if rest, ok := strings.CutPrefix(s, "RULE:"); ok {
			end, ok := ruleFieldsEnd(rest)
			if !ok {
				// The rule has fewer than two / outside escapes: it is
				// what remains up to the next comma, refused below.
				end = 0
			}
			n := len("RULE:") + end
			if i := strings.IndexByte(s[n:], ','); i >= 0 {
				n += i
			} else {
				n = len(s)
			}
			rule = s[:n]
			s = s[n:]
		} else if i := strings.IndexByte(s, ','); i >= 0 {
			rule, s = s[:i], s[i:]
		} else {
			rule, s = s, ""
		}
		s = strings.TrimPrefix(s, ",")
		s = strings.TrimLeft(s, " \t\n\r\f\v")
		if rule = strings.TrimSpace(rule); rule != "" {
			out = append(out, rule)
		}
	}
	return out
}

// ruleFieldsEnd returns where the replacement of a RULE (rest is what
// follows "RULE:") ends: just after its second unescaped /.
func ruleFieldsEnd(rest string) (int, bool) {
	slashes := 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			i++ // the escaped character is part of the field
		case '/':
			if slashes++; slashes == 2 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// parseMappingRule reads one rule of Kafka's syntax.
func parseMappingRule(text string) (mappingRule, error) {
	if text == "DEFAULT" {
		return mappingRule{isDefault: true, text: text}, nil
	}
	rest, ok := strings.CutPrefix(text, "RULE:")
	if !ok {
		return mappingRule{}, fmt.Errorf("rule %q is neither DEFAULT nor RULE:pattern/replacement/[LU]", text)
	}
	end, ok := ruleFieldsEnd(rest)
	if !ok {
		return mappingRule{}, fmt.Errorf("rule %q needs a pattern and a replacement, each ended by /: RULE:pattern/replacement/[LU]", text)
	}
	fields, flags := rest[:end-1], rest[end:]
	split := 0
	for i := 0; i < len(fields); i++ {
		if fields[i] == '\\' {
			i++
		} else if fields[i] == '/' {
			split = i
			break
		}
	}
	r := mappingRule{text: text, replacement: fields[split+1:]}
	switch flags {
	case "":
	case "L":
		r.lower = true
	case "U":
		r.upper = true
	default:
		return mappingRule{}, fmt.Errorf("rule %q ends with %q; after the replacement's / only L (lower case) or U (upper case) may follow", text, flags)
	}
	pattern := fields[:split]
	if strings.Contains(pattern, "&&") {
		return mappingRule{}, fmt.Errorf("rule %q: the pattern uses &&, Java's class intersection, which Go's regular expressions read as literal characters: write the class out", text)
	}
	if construct := javaOnlyConstruct(pattern); construct != "" {
		return mappingRule{}, fmt.Errorf("rule %q: the pattern uses %s, which Java's regular expressions have and Go's (RE2) do not, so Krabka cannot apply the rule as Kafka does: write the pattern without it", text, construct)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, fmt.Errorf("rule %q: the pattern is not a regular expression Krabka reads (RE2: no look-around, back-references or possessive repetition): %v", text, err)
	}
	if emptyAfterMatch(pattern) {
		return mappingRule{}, fmt.Errorf("rule %q: the pattern can match an empty string after a match, where Java's replaceAll repeats the replacement and Go's does not: anchor it with ^", text)
	}
	if err := checkReplacement(r.replacement, re); err != nil {
		return mappingRule{}, fmt.Errorf("rule %q: %v", text, err)
	}
	r.pattern = re
	r.whole = regexp.MustCompile(`^(?:` + pattern + `)$`) // compiles, as pattern does
	return r, nil
}

// javaOnlyConstructs are the group openings of Java's regular
// expressions that Go's lack, by what they are called.
var javaOnlyConstructs = []struct{ opening, name string }{
	{"(?<=", "look-behind"},
	{"(?<!", "negative look-behind"},
	{"(?=", "look-ahead"},
	{"(?!", "negative look-ahead"},
	{"(?>", "an atomic group"},
}

// boundedRepeatEnd matches a pattern that ends with a bounded repetition
// {n}, {n,} or {n,m}.
var boundedRepeatEnd = regexp.MustCompile(`\{[0-9]+(,[0-9]*)?\}$`)

// javaOnlyConstruct returns the first construct of pattern that Java's
// regular expressions apply and Go's cannot, named and quoted
// (look-around, atomic groups, back-references, possessive repetition),
// or "". Escaped and quoted (\Q…\E) characters and the insides of
// character classes are not constructs.
func javaOnlyConstruct(pattern string) string {
	class := 0 // the depth of nested character classes, as Java nests them
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			next := pattern[i+1]
			switch {
			case next == 'Q': // quoted up to \E: literal text
				end := strings.Index(pattern[i+2:], `\E`)
				if end < 0 {
					return ""
				}
				i += 2 + end + 1
				continue
			case class == 0 && next >= '1' && next <= '9':
				return fmt.Sprintf("the back-reference %q", pattern[i:i+2])
			case class == 0 && next == 'k' && strings.HasPrefix(pattern[i+2:], "<"):
				ref := pattern[i:]
				if end := strings.IndexByte(ref, '>'); end >= 0 {
					ref = ref[:end+1]
				}
				return fmt.Sprintf("the named back-reference %q", ref)
			}
			i++
		case c == '[':
			class++
		case c == ']' && class > 0:
			class--
		case class > 0:
		case c == '(':
			for _, j := range javaOnlyConstructs {
				if strings.HasPrefix(pattern[i:], j.opening) {
					return fmt.Sprintf("%s %q", j.name, j.opening)
				}
			}
			if strings.HasPrefix(pattern[i:], "(?") {
				i++ // the ? opens a group's flags or name, it repeats nothing
			}
		case (c == '*' || c == '+' || c == '?' || (c == '}' && boundedRepeatEnd.MatchString(pattern[:i+1]))) && strings.HasPrefix(pattern[i+1:], "+"):
			q := string(c)
			if c == '}' {
				q = boundedRepeatEnd.FindString(pattern[:i+1])
			}
			return fmt.Sprintf("the possessive repetition %q", q+"+")
		}
	}
	return ""
}

// emptyAfterMatch reports whether pattern may match an empty string at a
// position other than the start of the text: it can match empty, and
// not every match is anchored at the start (^ or \A).
func emptyAfterMatch(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return true
	}
	re = re.Simplify()
	return nullable(re) && !anchoredAtStart(re)
}

// nullable reports whether re can match the empty string, taking every
// assertion as possibly true.
func nullable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpCapture, syntax.OpPlus:
		return nullable(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || nullable(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !nullable(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if nullable(s) {
				return true
			}
		}
		return false
	}
	return false // literals, classes, any character, no match
}

// anchoredAtStart reports whether every match of re starts at the start
// of the text.
func anchoredAtStart(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return true
	case syntax.OpCapture:
		return anchoredAtStart(re.Sub[0])
	case syntax.OpConcat:
		return len(re.Sub) > 0 && anchoredAtStart(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchoredAtStart(s) {
				return false
			}
		}
		return true
	}
	return false
}

// checkReplacement refuses a replacement that Java's
// Matcher.appendReplacement would refuse at each match of re: a trailing
// \, a $ not followed by a group number or {name}, a ${name} that re does
// not have, or a group number when re has no group (Kafka escapes a
// number above the groups only when there is one).
func checkReplacement(repl string, re *regexp.Regexp) error {
	for i := 0; i < len(repl); i++ {
		switch repl[i] {
		case '\\':
			if i++; i == len(repl) {
				return errors.New("the replacement ends with \\, which escapes nothing")
			}
		case '$':
			if i+1 == len(repl) {
				return errors.New("the replacement ends with $, which names no group")
			}
			switch c := repl[i+1]; {
			case c == '{':
				end := strings.IndexByte(repl[i+2:], '}')
				if end < 0 {
					return errors.New("the replacement's ${ has no closing }")
				}
				if name := repl[i+2 : i+2+end]; re.SubexpIndex(name) < 0 {
					return fmt.Errorf("the replacement names group %q, which the pattern does not have", name)
				}
			case c >= '1' && c <= '9' && re.NumSubexp() == 0:
				return fmt.Errorf("the replacement refers to group %c, but the pattern has no group", c)
			case c < '0' || c > '9':
				return fmt.Errorf("the replacement's $ is followed by %q; write $1 for a group, or \\$ for a $", c)
			}
		}
	}
	return nil
}

// name returns the principal name of the certificate subject dn: the
// result of the first rule that matches it, or errNoMappingRule.
func (m *principalMapper) name(dn string) (string, error) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %s", errNoMappingRule, dn)
}

var (
	englishLower = cases.Lower(language.English)
	englishUpper = cases.Upper(language.English)
)

// apply maps dn by r, as Kafka's rule does: DEFAULT returns dn; a RULE
// whose pattern matches the whole of dn replaces every match of it in
// dn (Java's replaceAll), then changes the case (Locale.ENGLISH).
func (r mappingRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.whole.MatchString(dn) {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, m := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:m[0]])
		r.expand(&b, dn, m)
		last = m[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = englishLower.String(out)
	case r.upper:
		out = englishUpper.String(out)
	}
	return out, true
}

// expand appends r's replacement for the match m of dn, as Java's
// appendReplacement reads it after Kafka's escaping: \x is x; $n is
// group n, taking more digits while the number stays a group, and a
// number above the groups is literal text (as Kafka escapes it) except
// when the pattern has no group at all, where Java refuses it; ${name} is
// the named group. parseMappingRule has refused every replacement Java
// would refuse.
func (r mappingRule) expand(b *strings.Builder, dn string, m []int) {
	groups := r.pattern.NumSubexp()
	repl := r.replacement
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			b.WriteByte(repl[i])
		case c == '$' && i+1 < len(repl) && repl[i+1] == '{':
			end := strings.IndexByte(repl[i+2:], '}')
			writeGroup(b, dn, m, r.pattern.SubexpIndex(repl[i+2:i+2+end]))
			i += 2 + end
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			j := i + 2
			for j < len(repl) && repl[j] >= '0' && repl[j] <= '9' {
				j++
			}
			digits := repl[i+1 : j]
			if groups == 0 { // only $0, the whole match
				writeGroup(b, dn, m, 0)
				i++
				continue
			}
			n, k := groupReference(digits, groups)
			if n < 0 {
				b.WriteByte('$') // Kafka escapes a reference above the groups
				continue
			}
			writeGroup(b, dn, m, n)
			i += k
		default:
			b.WriteByte(c)
		}
	}
}

// groupReference returns the group a $ reference's digits name and how
// many digits it takes: Java takes the first digit, then each next one
// while the number stays at most groups; -1 when even the first digit
// names no group (Kafka then escapes the $, so it is literal), unless
// it is 0, the whole match.
func groupReference(digits string, groups int) (int, int) {
	n := int(digits[0] - '0')
	if n > groups {
		return -1, 0
	}
	k := 1
	for k < len(digits) {
		next, err := strconv.Atoi(digits[:k+1])
		if err != nil || next > groups {
			break
		}
		n, k = next, k+1
	}
	return n, k
}

func writeGroup(b *strings.Builder, dn string, m []int, g int) {
	if m[2*g] >= 0 {
		b.WriteString(dn[m[2*g]:m[2*g+1]])
	}
}
