package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// shellState is a metadata shell session: the tree, the working
// directory and, interactively, the history (Kafka's MetadataShellState
// and InteractiveShell).
type shellState struct {
	root        *shellNode
	cwd         string
	interactive bool
	history     []string
	// redacted replaces secrets by "[redacted]" when printing.
	redacted bool
	// width is the screen width ls lays its columns out in; 0 is
	// unknown, which gives one entry per line.
	width int
	// failed is set when a command printed an error.
	failed bool
	// exit is set by the exit command.
	exit bool
}

func newShellState(root *shellNode, interactive bool) *shellState {
	return &shellState{root: root, cwd: "/", interactive: interactive, redacted: true}
}

// run executes one parsed command, writing its output (errors included,
// as Kafka's handlers do) to w.
func (s *shellState) run(w *strings.Builder, c shellCommand) {
	if c.err != "" {
		s.fail(w, c.err)
		return
	}
	if c.typ == nil {
		return
	}
	switch c.typ.name {
	case "cat":
		s.cat(w, c.args)
	case "cd":
		s.cd(w, c.args)
	case "exit":
		s.exit = true
	case "find":
		s.find(w, c.args)
	case "help":
		s.help(w)
	case "history":
		s.printHistory(w, c.args)
	case "ls":
		s.ls(w, c.args)
	case "man":
		s.man(w, c.args[0])
	case "pwd":
		w.WriteString(s.cwd + "\n")
	case "tree":
		s.tree(w, c.args)
	}
}

func (s *shellState) fail(w *strings.Builder, msg string) {
	s.failed = true
	w.WriteString(msg + "\n")
}

// effectivePaths is Kafka's CommandUtils.getEffectivePaths: the
// non-empty paths, or "." when there are none.
func effectivePaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{"."}
	}
	return out
}

// glob resolves target for command cmd. A bad glob is reported, and so
// is a target that names nothing, with cmd's message missing.
func (s *shellState) glob(w *strings.Builder, cmd, target, missing string) []globMatch {
	ms, err := visitGlob(s.root, s.cwd, target)
	if err != nil {
		s.fail(w, cmd+": "+err.Error())
		return nil
	}
	if len(ms) == 0 {
		s.fail(w, cmd+": "+target+": "+missing)
	}
	return ms
}

// ls is Kafka's LsCommandHandler: the files named first, then each
// directory's children, headed by its name when more than one thing is
// listed.
func (s *shellState) ls(w *strings.Builder, targets []string) {
	type dir struct {
		name     string
		children []string
	}
	var files []string
	var dirs []dir
	for _, t := range effectivePaths(targets) {
		ms := s.glob(w, "ls", t, "no such file or directory.")
		for _, m := range ms {
			if m.node.isDir() {
				dirs = append(dirs, dir{m.lastComponent(), m.node.sortedNames()})
			} else {
				files = append(files, m.lastComponent())
			}
		}
	}
	s.printEntries(w, "", files)
	needIntro := len(files) > 0 || len(dirs) > 1
	first := len(files) == 0
	for _, d := range dirs {
		intro := ""
		if needIntro {
			// As in Kafka, an empty directory counts as the first
			// heading even though it prints nothing.
			if !first {
				intro = "\n"
			}
			intro += d.name + ":"
			first = false
		}
		s.printEntries(w, intro, d.children)
	}
}

// printEntries is Kafka's LsCommandHandler.printEntries: nothing for no
// entries, else the intro line (if any) and the entries in columns that
// fit the screen width, filled column by column.
func (s *shellState) printEntries(w *strings.Builder, intro string, entries []string) {
	if len(entries) == 0 {
		return
	}
	if intro != "" {
		w.WriteString(intro + "\n")
	}
	widths, perColumn := lsColumns(s.width, entries)
	for line := range perColumn {
		for col := range widths {
			i := line + col*perColumn
			if i >= len(entries) {
				continue
			}
			w.WriteString(entries[i])
			if col < len(widths)-1 {
				w.WriteString(strings.Repeat(" ", max(widths[col]-len(entries[i]), 0)))
			}
		}
		w.WriteString("\n")
	}
}

// lsColumns is Kafka's LsCommandHandler.calculateColumnSchema: the widest
// layout (each column as wide as its longest entry plus two) whose last
// column is used and whose total fits width; one column when width is
// unknown (0) or under 8. It returns the column widths and the number of
// entries per column.
func lsColumns(width int, entries []string) ([]int, int) {
	maxColumns := width / 4
	if maxColumns <= 1 {
		return []int{0}, len(entries)
	}
	for n := maxColumns; n > 1; n-- {
		perColumn := (len(entries) + n - 1) / n
		widths := make([]int, n)
		total := 0
		for i, e := range entries {
			widths[i/perColumn] = max(widths[i/perColumn], len(e)+2)
		}
		for _, cw := range widths {
			total += cw
		}
		if widths[n-1] != 0 && total <= width {
			return widths, perColumn
		}
	}
	return []int{0}, len(entries)
}

// cat is Kafka's CatCommandHandler.
func (s *shellState) cat(w *strings.Builder, targets []string) {
	s.printTargets(w, "cat", targets, true)
}

// tree is Kafka's TreeCommandHandler.
func (s *shellState) tree(w *strings.Builder, targets []string) {
	s.printTargets(w, "tree", targets, false)
}

// printTargets prints every node each target names; filesOnly refuses
// directories, as cat does.
func (s *shellState) printTargets(w *strings.Builder, cmd string, targets []string, filesOnly bool) {
	for _, t := range targets {
		ms := s.glob(w, cmd, t, "No such file or directory.")
		for _, m := range ms {
			if filesOnly && m.node.isDir() {
				s.fail(w, cmd+": "+t+": Is a directory")
				continue
			}
			p := shellPrinter{b: w, redacted: s.redacted}
			p.print(m.node)
		}
	}
}

// find is Kafka's FindCommandHandler: every path below each match,
// spelled from the path as given.
func (s *shellState) find(w *strings.Builder, paths []string) {
	var walk func(path string, n *shellNode)
	walk = func(path string, n *shellNode) {
		w.WriteString(path + "\n")
		for _, name := range n.sortedNames() {
			c := n.child(name)
			if c == nil {
				continue
			}
			next := path + "/" + name
			if strings.HasSuffix(path, "/") {
				next = path + name
			}
			walk(next, c)
		}
	}
	for _, p := range effectivePaths(paths) {
		ms := s.glob(w, "find", p, "no such file or directory.")
		for _, m := range ms {
			walk(p, m.node)
		}
	}
}

// cd is Kafka's CdCommandHandler: the first match becomes the working
// directory.
func (s *shellState) cd(w *strings.Builder, args []string) {
	target := "/"
	if len(args) == 1 {
		target = args[0]
	}
	ms := s.glob(w, "cd", target, "no such directory.")
	for _, m := range ms {
		if !m.node.isDir() {
			s.fail(w, "cd: "+target+": not a directory.")
		} else {
			s.cwd = m.absolute()
		}
	}
}

// help is Kafka's HelpCommandHandler.
func (s *shellState) help(w *strings.Builder) {
	w.WriteString("Welcome to the Apache Kafka metadata shell.\n\n")
	cmds := availableCommands(true)
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	choice := "{" + strings.Join(names, ",") + "}"
	fmt.Fprintf(w, "usage:  %s ...\n\npositional arguments:\n  %s\n", choice, choice)
	for _, c := range cmds {
		fmt.Fprintf(w, "    %-21s%s\n", c.name, c.description)
	}
}

// man is Kafka's ManCommandHandler.
func (s *shellState) man(w *strings.Builder, name string) {
	var t *shellCommandType
	for i := range shellCommandTypes {
		if shellCommandTypes[i].name == name {
			t = &shellCommandTypes[i]
		}
	}
	if t == nil {
		s.fail(w, "man: unknown command "+name+". Type help to get a list of commands.")
		return
	}
	fmt.Fprintf(w, "%s: %s\n\n", t.name, t.description)
	usage := "usage: " + t.name
	if t.usage != "" {
		usage += " " + t.usage
	}
	w.WriteString(usage + "\n")
	if len(t.args) > 0 {
		w.WriteString("\npositional arguments:\n")
		for _, a := range t.args {
			fmt.Fprintf(w, "  %-21s%s\n", a[0], a[1])
		}
	}
}

// printHistory is Kafka's HistoryCommandHandler: the last n lines, each
// with its index right-aligned in five columns.
func (s *shellState) printHistory(w *strings.Builder, args []string) {
	n := len(s.history)
	if len(args) == 1 {
		v, _ := strconv.Atoi(args[0]) // parseShellCommand checked it
		n = min(max(v, 0), len(s.history))
	}
	for i := len(s.history) - n; i < len(s.history); i++ {
		fmt.Fprintf(w, "%5d  %s\n", i, s.history[i])
	}
}

// interact runs the interactive shell: Kafka's lines before the shell
// starts, its banner and ">> " prompt, one command per line of in, until
// exit or the end of in. The image is loaded before interact is called, so
// "Loading..." and "Starting..." follow each other at once.
func (s *shellState) interact(in io.Reader, out io.Writer) error {
	if _, err := io.WriteString(out, "Loading...\nStarting...\n[ Kafka Metadata Shell ]\n"); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		if _, err := io.WriteString(out, ">> "); err != nil {
			return err
		}
		if !sc.Scan() {
			if _, err := io.WriteString(out, "\n"); err != nil {
				return err
			}
			return sc.Err()
		}
		line := sc.Text()
		var w strings.Builder
		if strings.TrimSpace(line) != "" {
			s.history = append(s.history, line)
		}
		words, err := splitShellLine(line)
		if err != nil {
			s.fail(&w, err.Error())
		} else {
			s.run(&w, parseShellCommand(words, true))
		}
		if _, err := io.WriteString(out, w.String()); err != nil {
			return err
		}
		if s.exit {
			return nil
		}
	}
}
