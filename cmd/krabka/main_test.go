package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden files under testdata.
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// result is what one in-process run of the command printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// runKrabka runs the krabka command line args in-process.
func runKrabka(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// mustSucceed runs args and fails the test unless the command exits 0.
func mustSucceed(t *testing.T, args ...string) result {
	t.Helper()
	r := runKrabka(t, args...)
	if r.code != 0 {
		t.Fatalf("krabka %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// mustFail runs args and checks that the command exits 1 with one error
// line on stderr containing want.
func mustFail(t *testing.T, want string, args ...string) {
	t.Helper()
	r := runKrabka(t, args...)
	if r.code != 1 {
		t.Fatalf("krabka %s: exit %d, want 1; stdout %q", strings.Join(args, " "), r.code, r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "Error: ") {
		t.Fatalf("krabka %s: stderr %q, want one line starting with Error:", strings.Join(args, " "), r.stderr)
	}
	if !strings.Contains(lines[0], want) {
		t.Fatalf("krabka %s: stderr %q, want it to contain %q", strings.Join(args, " "), lines[0], want)
	}
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update after checking the change)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestRootVersionAndLogFormat(t *testing.T) {
	r := mustSucceed(t, "--version")
	if !strings.HasPrefix(r.stdout, "krabka version ") {
		t.Errorf("--version printed %q", r.stdout)
	}
	mustFail(t, `--log-format "xml": want text or json`, "--log-format", "xml", "storage", "random-uuid")
	mustSucceed(t, "--log-format", "json", "storage", "random-uuid")
	mustFail(t, "unknown command", "no-such-command")
	mustFail(t, "storage needs a subcommand", "storage")
}

func TestJSONLogFormatOnStderr(t *testing.T) {
	dir := t.TempDir()
	seg := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(seg, []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustSucceed(t, "--log-format", "json", "dump-log", "--files", seg)
	if !strings.HasPrefix(r.stderr, `{"time":`) || !strings.Contains(r.stderr, `"msg":"damaged file"`) {
		t.Errorf("stderr %q, want a JSON log line about the damaged file", r.stderr)
	}
}

func TestExitErrorIsOneLine(t *testing.T) {
	n := newTestNode(t, 1, staticVoters, "listeners=CONTROLLER://:9093,PLAIN://:9092")
	mustFail(t, "; ", "storage", "format", "-t", testClusterID, "-c", n.props)
}
