package raft

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseProperties checks that no input makes ParseProperties panic,
// that every problem with a readable file is a *ConfigError, and that
// what was read, valid or not, renders to text that reads back to the
// same properties. The seed corpus is testdata/fuzz/FuzzParseProperties
// plus the files in testdata/config.
func FuzzParseProperties(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "config", "*.properties"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(baseProperties))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := ParseProperties(data)
		if err != nil {
			if strings.HasPrefix(err.Error(), "raft: read properties: ") {
				return
			}
			for _, p := range configErrors(t, err) {
				if p.Key == "" || p.Reason == "" {
					t.Errorf("problem %#v lacks a key or a reason", p)
				}
			}
		}
		back, _, backErr := ParseProperties([]byte(c.String()))
		// An unreadable value leaves its default, which may make the
		// rendered text valid; a valid file must stay valid.
		if err == nil && backErr != nil {
			t.Errorf("reading String() back = %v\ntext:\n%s", backErr, c)
		}
		if diff := cmp.Diff(c.Properties(), back.Properties()); diff != "" {
			t.Errorf("round trip changed the properties (-before +after):\n%s", diff)
		}
	})
}

// TestParsePropertiesLeavesNoGoroutines guards against the properties
// lexer's goroutine outliving a parse that fails part way.
func TestParsePropertiesLeavesNoGoroutines(t *testing.T) {
	inputs := []string{
		"a=\\u12",
		"a=b\\",
		"\\u00zz=1",
		"node.id=1\nx=\\uXYZW\n",
	}
	before := runtime.NumGoroutine()
	for range 100 {
		for _, in := range inputs {
			if _, _, err := ParseProperties([]byte(in)); err == nil {
				t.Fatalf("ParseProperties(%q) = nil error, want a syntax error", in)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after failed parses, %d before", runtime.NumGoroutine(), before)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
