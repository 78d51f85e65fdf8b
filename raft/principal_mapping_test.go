package raft

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestPrincipalMappingRulesValid: the rules Kafka's SslPrincipalMapperTest
// accepts parse (testValidRules).
func TestPrincipalMappingRulesValid(t *testing.T) {
	for _, rules := range []string{
		"DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/", "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := parsePrincipalMappingRules(rules); err != nil {
			t.Errorf("parsePrincipalMappingRules(%q) = %v, want it accepted", rules, err)
		}
	}
}

// TestPrincipalMappingRulesInvalid: the rules Kafka refuses
// (testInvalidRules) are refused, and so are the ones Krabka cannot
// apply as Kafka would, each saying why.
func TestPrincipalMappingRulesInvalid(t *testing.T) {
	for _, tt := range []struct {
		want  string
		rules []string
	}{
		{"neither DEFAULT nor RULE", []string{"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/"}},
		{"needs a pattern and a replacement", []string{"RULE:CN=(.*?),OU=ServiceUsers.*/$1", "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
			"RULE:^CN=(.*?),OU=ServiceUsers.*$/U", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU", `RULE:^CN=(.*)$/a\/`}},
		{`ends with "L/U"`, []string{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U"}},
		{`ends with "LU"`, []string{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/LU"}},
		{"not a regular expression Krabka reads", []string{"RULE:^CN=(a$/x/", `RULE:^CN=\h+$/x/`}},
		{"Java's class intersection", []string{"RULE:^CN=[a-z&&[^x]]+$/x/"}},
		{"can match an empty string after a match", []string{"RULE:.*/x/", "RULE:(.*)$/$1/", "RULE://"}},
		{`$ is followed by 'x'`, []string{"RULE:^CN=(.*)$/$x/"}},
		{"ends with $", []string{"RULE:^CN=(.*)$/a$/"}},
		{"the pattern has no group", []string{"RULE:^CN=.*$/$1/"}},
		{`names group "m"`, []string{"RULE:^CN=(?P<n>.*)$/${m}/"}},
	} {
		for _, rules := range tt.rules {
			if _, err := parsePrincipalMappingRules(rules); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parsePrincipalMappingRules(%q) = %v, want an error saying %q", rules, err, tt.want)
			}
		}
	}
}

// TestPrincipalMappingRulesJavaOnlyConstructs: a pattern using a
// construct of Java's regular expressions that Go's cannot apply is
// refused at start, the problem naming ssl.principal.mapping.rules (or
// the listener's override) and the construct; the same characters
// escaped or inside a character class are accepted.
func TestPrincipalMappingRulesJavaOnlyConstructs(t *testing.T) {
	for _, tt := range []struct{ pattern, want string }{
		{`^CN=(?=admin)[^,]+$`, `look-ahead "(?="`},
		{`^CN=(?!guest)[^,]+$`, `negative look-ahead "(?!"`},
		{`^CN=[^,]+(?<=n),O=x$`, `look-behind "(?<="`},
		{`^CN=[^,]+(?<!x),O=x$`, `negative look-behind "(?<!"`},
		{`^CN=(?>a|ab)c$`, `an atomic group "(?>"`},
		{`^CN=(\w)\1$`, `the back-reference "\\1"`},
		{`^CN=(?<n>\w)\k<n>$`, `the named back-reference "\\k<n>"`},
		{`^CN=a*+$`, `the possessive repetition "*+"`},
		{`^CN=[a-z]++$`, `the possessive repetition "++"`},
		{`^CN=a?+b$`, `the possessive repetition "?+"`},
		{`^CN=a{2,3}+$`, `the possessive repetition "{2,3}+"`},
		{`^CN=a{2}+$`, `the possessive repetition "{2}+"`},
	} {
		rules := "RULE:" + tt.pattern + "/x/"
		for _, key := range []string{keySSLPrincipalMappingRules, "listener.name.controller." + keySSLPrincipalMappingRules} {
			// A properties file escapes a backslash with a backslash.
			_, _, err := ParseProperties([]byte(sslBase + key + "=" + strings.ReplaceAll(rules, `\`, `\\`) + "\n"))
			got := configErrors(t, err)
			if len(got) != 1 || got[0].Key != key || !strings.Contains(got[0].Reason, "uses "+tt.want+", which Java's regular expressions have and Go's (RE2) do not") {
				t.Errorf("%s=%s: %v, want a problem with %s naming %s", key, rules, err, key, tt.want)
			}
		}
	}
	for _, pattern := range []string{`^CN=\(?=x\)$`, `^CN=[(?=]+$`, `^CN=a\*+$`, `^CN=a\}+$`, `^CN=(?<name>\w+)$`, `^CN=(?:a)+$`, `^CN=a+?$`, `^CN=\Qa++(?=\1\E$`, `^CN=[a-z[0-9]]++$`} {
		_, err := parsePrincipalMappingRules("RULE:" + pattern + "/x/")
		if pattern == `^CN=[a-z[0-9]]++$` {
			if err == nil || !strings.Contains(err.Error(), `possessive repetition "++"`) {
				t.Errorf("%s: %v, want the possessive repetition after a nested class refused", pattern, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v, want it accepted", pattern, err)
		}
	}
}

// TestPrincipalMapper: Kafka's testSslPrincipalMapper and
// testCommaWithWhitespace cases, and the replacement and case rules of
// Java's replaceAll and Kafka's escaping.
func TestPrincipalMapper(t *testing.T) {
	kafka := strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", ")
	for _, tt := range []struct{ rules, dn, want string }{
		{kafka, "CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"},
		{kafka, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"},
		{kafka, "cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"},
		{kafka, "cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"},
		{kafka, "OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"},
		{`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`, `CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`, `Tkac\, Adam`},

		{"RULE:^CN=([^,]+),O=(.*)$/$2:$1/", "CN=a,O=b", "b:a"},
		{"RULE:^CN=([^,]+),O=(.*)$/$12/", "CN=a,O=b", "a2"},            // $12 above the groups: $1, then 2
		{"RULE:^CN=([^,]+),O=(.*)$/$3-$1/", "CN=a,O=b", "$3-a"},        // no group 3: literal, as Kafka escapes it
		{"RULE:^CN=([^,]+),O=(.*)$/$01/", "CN=a,O=b", "a"},             // Java reads $01 as group 1
		{`RULE:^CN=([^,]+),O=(.*)$/\$1 \\\/$1/`, "CN=a,O=b", `$1 \/a`}, // \x is x
		{"RULE:^CN=.*$/[$0]/", "CN=a", "[CN=a]"},
		{"RULE:^CN=(?P<cn>[^,]+).*$/${cn}/U", "CN=straße,O=x", "STRASSE"}, // Locale.ENGLISH's full case mapping
		{"RULE:^CN=([^,]+).*$/$1/L", "CN=ADMİN", "admi̇n"},
		{"RULE:^CN=x$/y/, RULE:^CN=(.*)$/z$1/", "CN=a", "za"},  // first match wins
		{"RULE:^O=(.*)$/$1/, DEFAULT", "CN=a,O=b", "CN=a,O=b"}, // a match must cover the whole name
	} {
		m, err := parsePrincipalMappingRules(tt.rules)
		if err != nil {
			t.Errorf("parsePrincipalMappingRules(%q) = %v", tt.rules, err)
			continue
		}
		if got, err := m.name(tt.dn); err != nil || got != tt.want {
			t.Errorf("rules %q: name(%q) = %q, %v; want %q", tt.rules, tt.dn, got, err, tt.want)
		}
	}
	// A subject no rule matches, and any subject when the list has no
	// rule (Kafka's SslPrincipalMapper then has none to try).
	for _, rules := range []string{"RULE:^CN=admin,.*$/admin/", "", " , ,"} {
		m, err := parsePrincipalMappingRules(rules)
		if err != nil {
			t.Errorf("parsePrincipalMappingRules(%q) = %v, want it accepted", rules, err)
			continue
		}
		if got, err := m.name("CN=other,O=krabka"); !errors.Is(err, errNoMappingRule) {
			t.Errorf("rules %q: name of a subject no rule matches = %q, %v; want Kafka's NoMatchingRule refusal", rules, got, err)
		}
	}
}

// TestPrincipalMappingRulesSplitting: Kafka's testRulesSplitting cases:
// commas separate rules except inside a RULE's pattern or replacement,
// white space around a rule is dropped, empty rules are skipped, and
// escapes stay part of the text.
func TestPrincipalMappingRulesSplitting(t *testing.T) {
	for _, tt := range []struct {
		rules string
		want  []string
	}{
		{"", nil},
		{"DEFAULT", []string{"DEFAULT"}},
		{"RULE://", []string{"RULE://"}},
		{"RULE:/.*/", []string{"RULE:/.*/"}},
		{"RULE:/.*/L", []string{"RULE:/.*/L"}},
		{"RULE://,DEFAULT", []string{"RULE://", "DEFAULT"}},
		{"  RULE:// ,  DEFAULT  ", []string{"RULE://", "DEFAULT"}},
		{"  RULE:   /     / ,  DEFAULT  ", []string{"RULE:   /     /", "DEFAULT"}},
		{"  RULE:  /     /U   ,DEFAULT  ", []string{"RULE:  /     /U", "DEFAULT"}},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", []string{"RULE:([A-Z]*)/$1/U", "RULE:([a-z]+)/$1/", "DEFAULT"}},
		{",   , , ,      , , ,   ", nil},
		{",,RULE://,,,DEFAULT,,", []string{"RULE://", "DEFAULT"}},
		{",  , RULE: /   /    ,,,   DEFAULT, ,   ", []string{"RULE: /   /", "DEFAULT"}},
		{"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", []string{"RULE:   /  /U", "DEFAULT"}},
		{`RULE:\/\\\(\)\n\t/\/\//`, []string{`RULE:\/\\\(\)\n\t/\/\//`}},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, []string{`RULE:\**\/+/*/L`, `RULE:\/*\**/**/`}},
		{`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			[]string{`RULE:,RULE:,/,RULE:,\//U`, `RULE:,/RULE:,/`, `RULE:,RULE:,/L,RULE:,/L`, `RULE:, DEFAULT, /DEFAULT/`, "DEFAULT"}},
	} {
		if got := splitMappingRules(strings.TrimSpace(tt.rules)); !slices.Equal(got, tt.want) {
			t.Errorf("splitMappingRules(%q) = %q, want %q", tt.rules, got, tt.want)
		}
	}
	// The rules of the last case are each valid.
	for _, r := range []string{`RULE:,RULE:,/,RULE:,\//U`, `RULE:,/RULE:,/`, `RULE:, DEFAULT, /DEFAULT/`} {
		if _, err := parseMappingRule(r); err != nil {
			t.Errorf("parseMappingRule(%q) = %v", r, err)
		}
	}
}

// FuzzPrincipalMappingRules: no rules text, however malformed, makes the
// parser panic, and a mapper it accepts maps any name without panicking.
func FuzzPrincipalMappingRules(f *testing.F) {
	for _, seed := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`,
		`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
		"RULE:^CN=([^,]+),O=(.*)$/$12${x}$/",
		"RULE:\\",
	} {
		f.Add(seed, "CN=Duke,OU=ServiceUsers,O=Org,C=US")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := parsePrincipalMappingRules(rules)
		if err != nil {
			return
		}
		_, _ = m.name(dn)
	})
}
