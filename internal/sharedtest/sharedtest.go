// Package sharedtest locates the project's shared reference data (Kafka's
// JSON schemas and metadata directories written by real Kafka nodes) for
// conformance tests.
//
// The data lives beside the repository, in ../shared, and is not part of a
// user's clone. Tests that need it call [Dir]: when the folder is absent the
// test is skipped with a message, except when the environment variable CI is
// set, where absence is a failure, so that CI can never pass by silently
// skipping the conformance checks.
package sharedtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// EnvDir names an environment variable that overrides where the shared
// folder is looked for.
const EnvDir = "KRABKA_SHARED_DIR"

// Dir returns the path of the shared folder's subdirectory sub (for example
// "kafka-schemas" or "kafka-samples"). It skips t when the folder is absent,
// or fails t when the environment variable CI is set.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	root, err := find()
	if err == nil {
		p := filepath.Join(root, sub)
		if fi, statErr := os.Stat(p); statErr == nil && fi.IsDir() {
			return p
		}
	}
	msg := "shared reference data (../shared/" + sub + ") not found; set " + EnvDir + " to the shared folder"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (required when CI is set)")
	}
	t.Skip(msg)
	return ""
}

// Files returns the files below the shared subdirectory sub whose names
// end in one of suffixes, by path relative to it (slash-separated), with
// their bytes. It skips or fails t as [Dir] does when the folder is
// absent, and fails t when it holds no such file.
func Files(t testing.TB, sub string, suffixes ...string) map[string][]byte {
	t.Helper()
	root := Dir(t, sub)
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(path, s) }) {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no %v files below %s", suffixes, root)
	}
	return files
}

// find returns the shared folder: $KRABKA_SHARED_DIR, or ../shared relative
// to the module root (the first parent directory holding go.mod).
func find() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared"), nil
		}
		if filepath.Dir(d) == d {
			return "", os.ErrNotExist
		}
	}
}
