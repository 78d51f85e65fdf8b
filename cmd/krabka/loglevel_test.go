package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// startAndStop runs server-start with args under a context that has
// already ended: the node starts, logs its start-up lines, and stops at
// once. It returns stderr.
func startAndStop(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr syncBuffer
	if code := runContext(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("krabka %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stderr.String()
}

// TestLogLevel: --log-level takes debug, info, warn or error and refuses
// anything else; server-start takes krabka.log.level from its file when
// the command line gives no level, and --log-level wins over it.
func TestLogLevel(t *testing.T) {
	mustFail(t, `--log-level "verbose": must be debug, info, warn or error`, "--log-level", "verbose", "storage", "random-uuid")
	mustSucceed(t, "--log-level", "WARN", "storage", "random-uuid")

	bad := newTestNode(t, 1, staticVoters, "krabka.log.level=loud")
	mustFail(t, `krabka.log.level`, "server-start", bad.props)

	n, _ := newFormattedVoter(t)
	if out := startAndStop(t, "--log-format", "json", "server-start", n.props); !strings.Contains(out, `"msg":"controller started"`) {
		t.Errorf("default level: no controller started line:\n%s", out)
	}
	if out := startAndStop(t, "--log-format", "json", "--log-level", "warn", "server-start", n.props); strings.Contains(out, `"level":"INFO"`) {
		t.Errorf("--log-level warn logged INFO lines:\n%s", out)
	}
	f, err := os.OpenFile(n.props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("krabka.log.level=error\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if out := startAndStop(t, "--log-format", "json", "server-start", n.props); out != "" {
		t.Errorf("krabka.log.level=error logged:\n%s", out)
	}
	if out := startAndStop(t, "--log-format", "json", "--log-level", "debug", "server-start", n.props); !strings.Contains(out, `"level":"DEBUG"`) || !strings.Contains(out, `"msg":"controller started"`) {
		t.Errorf("--log-level debug over krabka.log.level=error: no DEBUG or INFO lines:\n%s", out)
	}
}

// TestLogDurationsAreReadable: both formats write a duration as
// time.Duration prints it.
func TestLogDurationsAreReadable(t *testing.T) {
	for format, want := range map[string]string{"json": `"wait":"1.5s"`, "text": "wait=1.5s"} {
		var b bytes.Buffer
		lg, err := newLeveledLogger(format, &b, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		lg.With(slog.Group("g", slog.Duration("inner", 250*time.Millisecond))).Info("x", slog.Duration("wait", 1500*time.Millisecond))
		if out := b.String(); !strings.Contains(out, want) || !strings.Contains(out, "250ms") {
			t.Errorf("%s: %q, want %s and 250ms", format, out, want)
		}
	}
}
