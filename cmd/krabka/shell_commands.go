package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// shellCommandType is one command of the metadata shell, Kafka's
// Commands.Type.
type shellCommandType struct {
	name        string
	description string
	// shellOnly commands exist only in the interactive shell.
	shellOnly bool
	// usage and args describe the positional arguments for man.
	usage string
	args  [][2]string
	// minArgs and maxArgs bound the number of arguments (-1: any).
	minArgs, maxArgs int
}

// shellCommandTypes are Kafka's metadata shell commands (Commands.TYPES),
// sorted by name.
var shellCommandTypes = []shellCommandType{
	{name: "cat", description: "Show the contents of metadata files.", usage: "targets [targets ...]", args: [][2]string{{"targets", "The metadata files to display."}}, minArgs: 1, maxArgs: -1},
	{name: "cd", description: "Set the current working directory.", shellOnly: true, usage: "[target]", args: [][2]string{{"target", "The directory to change to."}}, maxArgs: 1},
	{name: "exit", description: "Exit the metadata shell.", shellOnly: true},
	{name: "find", description: "Search for nodes in the directory hierarchy.", usage: "[paths [paths ...]]", args: [][2]string{{"paths", "The paths to start at."}}, maxArgs: -1},
	{name: "help", description: "Display this help message.", shellOnly: true},
	{name: "history", description: "Print command history.", shellOnly: true, usage: "[numEntriesToShow]", args: [][2]string{{"numEntriesToShow", "The number of entries to show."}}, maxArgs: 1},
	{name: "ls", description: "List metadata nodes.", usage: "[targets [targets ...]]", args: [][2]string{{"targets", "The metadata node paths to list."}}, maxArgs: -1},
	{name: "man", description: "Show the help text for a specific command.", shellOnly: true, usage: "cmd", args: [][2]string{{"cmd", "The command to get help text for."}}, minArgs: 1, maxArgs: 1},
	{name: "pwd", description: "Print the current working directory.", shellOnly: true},
	{name: "tree", description: "Show the contents of metadata nodes in a tree structure.", usage: "targets [targets ...]", args: [][2]string{{"targets", "The metadata nodes to display."}}, minArgs: 1, maxArgs: -1},
}

// shellCommand is a parsed command line.
type shellCommand struct {
	// typ is nil for an empty line or an error.
	typ  *shellCommandType
	args []string
	// err is the message Kafka's ErroneousCommandHandler prints.
	err string
}

// availableCommands returns the commands of the interactive shell, or of
// a one-shot run (no shell-only commands).
func availableCommands(interactive bool) []*shellCommandType {
	var out []*shellCommandType
	for i := range shellCommandTypes {
		if interactive || !shellCommandTypes[i].shellOnly {
			out = append(out, &shellCommandTypes[i])
		}
	}
	return out
}

// parseShellCommand parses the words of a command line as Kafka's
// Commands.parseCommand does with argparse4j: trailing empty words are
// dropped, an empty line does nothing, a unique prefix of a command name
// is refused with a hint, and arguments are checked against the command.
func parseShellCommand(words []string, interactive bool) shellCommand {
	for len(words) > 0 && words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return shellCommand{}
	}
	cmds := availableCommands(interactive)
	var match []*shellCommandType
	for _, c := range cmds {
		if c.name == words[0] {
			match = []*shellCommandType{c}
			break
		}
		if strings.HasPrefix(c.name, words[0]) {
			match = append(match, c)
		}
	}
	switch {
	case len(match) == 0 || words[0] == "":
		quoted := make([]string, len(cmds))
		for i, c := range cmds {
			quoted[i] = "'" + c.name + "'"
		}
		return shellCommand{err: fmt.Sprintf("invalid choice: '%s' (choose from %s)", words[0], strings.Join(quoted, ", "))}
	case len(match) > 1:
		names := make([]string, len(match))
		for i, c := range match {
			names[i] = c.name
		}
		return shellCommand{err: fmt.Sprintf("ambiguous command: %s could match %s", words[0], strings.Join(names, ", "))}
	case match[0].name != words[0]:
		return shellCommand{err: fmt.Sprintf("invalid choice: '%s': did you mean '%s'?", words[0], match[0].name)}
	}
	t := match[0]
	args := words[1:]
	// argparse4j reads a word that starts with '-' as an option, and the
	// commands have none.
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && !isNegativeNumber(a) {
			return shellCommand{err: fmt.Sprintf("unrecognized arguments: '%s'", a)}
		}
	}
	if len(args) < t.minArgs {
		return shellCommand{err: "too few arguments"}
	}
	if t.maxArgs >= 0 && len(args) > t.maxArgs {
		return shellCommand{err: fmt.Sprintf("unrecognized arguments: '%s'", strings.Join(args[t.maxArgs:], " "))}
	}
	if t.name == "history" && len(args) == 1 {
		if _, err := strconv.ParseInt(args[0], 10, 32); err != nil {
			return shellCommand{err: fmt.Sprintf("argument numEntriesToShow: could not convert '%s' to Integer", args[0])}
		}
	}
	return shellCommand{typ: t, args: args}
}

func isNegativeNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// errUnterminatedQuote is the error of a line with an open quote.
var errUnterminatedQuote = errors.New("unterminated quote")

// splitShellLine splits an interactive line into words as JLine's
// DefaultParser does: words are separated by white space, single and
// double quotes group (and are removed), and a backslash outside single
// quotes takes the next character literally.
func splitShellLine(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, errUnterminatedQuote
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// globComponent is one path component of a glob, Kafka's GlobComponent:
// '?' is any character, '*' any run, {a,b} a choice (not nested), '\'
// escapes; a component without any of them is literal.
type globComponent struct {
	literal string
	re      *regexp.Regexp
}

// parseGlobComponent compiles a component. A malformed glob (a nested
// or unterminated group) is an error; Kafka's GlobComponent logs it and
// then matches the component literally, which finds nothing.
func parseGlobComponent(s string) (globComponent, error) {
	var b strings.Builder
	b.WriteString("^")
	literal := true
	group := false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch c {
		case '?':
			literal = false
			b.WriteString(".")
		case '*':
			literal = false
			b.WriteString(".*")
		case '\\':
			if i+1 == len(rs) {
				b.WriteString(`\\`)
			} else {
				i++
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			}
		case '{':
			if group {
				return globComponent{}, fmt.Errorf("bad glob %q: can't nest glob groups", s)
			}
			literal, group = false, true
			b.WriteString("(?:(?:")
		case ',':
			if group {
				b.WriteString(")|(?:")
			} else {
				b.WriteString(",")
			}
		case '}':
			if group {
				group = false
				b.WriteString("))")
			} else {
				b.WriteString(`\}`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if group {
		return globComponent{}, fmt.Errorf("bad glob %q: unterminated glob group", s)
	}
	if literal {
		return globComponent{literal: s}, nil
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return globComponent{}, fmt.Errorf("bad glob %q: %w", s, err)
	}
	return globComponent{re: re}, nil
}

// splitShellPath splits a path into its non-empty components and resolves
// "." and ".." (Kafka's CommandUtils.splitPath and stripDotPathComponents).
func splitShellPath(path string) []string {
	var out []string
	for _, c := range strings.Split(path, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return out
}

// globMatch is a node a glob found, with its absolute path components.
type globMatch struct {
	path []string
	node *shellNode
}

// lastComponent is the name ls prints for a match: its last path
// component, or "/" for the root.
func (m globMatch) lastComponent() string {
	if len(m.path) == 0 {
		return "/"
	}
	return m.path[len(m.path)-1]
}

// absolute is the match's absolute path.
func (m globMatch) absolute() string { return "/" + strings.Join(m.path, "/") }

// visitGlob returns the nodes that glob names relative to cwd, in
// sorted order, as Kafka's GlobVisitor finds them.
func visitGlob(root *shellNode, cwd, glob string) ([]globMatch, error) {
	full := glob
	if !strings.HasPrefix(glob, "/") {
		full = cwd + "/" + glob
	}
	comps := splitShellPath(full)
	globs := make([]globComponent, len(comps))
	for i, c := range comps {
		g, err := parseGlobComponent(c)
		if err != nil {
			return nil, err
		}
		globs[i] = g
	}
	var out []globMatch
	var walk func(i int, n *shellNode, path []string)
	walk = func(i int, n *shellNode, path []string) {
		if i == len(globs) {
			out = append(out, globMatch{path: slices.Clone(path), node: n})
			return
		}
		if !n.isDir() {
			return
		}
		if globs[i].re == nil {
			if c := n.child(globs[i].literal); c != nil {
				walk(i+1, c, append(path, globs[i].literal))
			}
			return
		}
		for _, name := range n.sortedNames() {
			if globs[i].re.MatchString(name) {
				if c := n.child(name); c != nil {
					walk(i+1, c, append(path, name))
				}
			}
		}
	}
	walk(0, root, nil)
	return out, nil
}
