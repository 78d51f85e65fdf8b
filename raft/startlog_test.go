package raft

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestStartLinesAgree: when the log holds a later epoch than the
// quorum-state file (here none), the core starts in the log's epoch, and
// the "controller started" line reports the same role, epoch, leader and
// log end as the core's "started" line.
func TestStartLinesAgree(t *testing.T) {
	cfg := ForTests(1, t.TempDir())
	// Two voters that never answer: the node stays where it started.
	cfg.QuorumVoters = append(cfg.QuorumVoters, QuorumVoter{ID: 2, Host: "127.0.0.1", Port: 1}, QuorumVoter{ID: 3, Host: "127.0.0.1", Port: 1})
	writeForeignLog(t, cfg, 4, metadataVersionRecord())
	var logs logBuffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	lines := map[string]map[string]any{}
	logs.mu.Lock()
	out := logs.b.String()
	logs.mu.Unlock()
	for line := range strings.Lines(out) {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader([]byte(line)))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if msg, _ := m["msg"].(string); msg == "started" || msg == "controller started" {
			lines[msg] = m
		}
	}
	core, ctl := lines["started"], lines["controller started"]
	if core == nil || ctl == nil {
		t.Fatalf("no started or controller started line in:\n%s", out)
	}
	if core["epoch"] != json.Number("4") {
		t.Errorf("core started in epoch %v, want the log's 4", core["epoch"])
	}
	for _, k := range []string{"role", "epoch", "leader_id", "offset"} {
		if core[k] != ctl[k] {
			t.Errorf("%s: started says %v, controller started %v", k, core[k], ctl[k])
		}
	}
}

// TestLogLevelProperty: krabka.log.level takes debug, info, warn or error
// in any case, refuses anything else naming the key, and a node started
// with it hands its Logger only the lines at that level and above.
func TestLogLevelProperty(t *testing.T) {
	base := "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\nlisteners=CONTROLLER://:9093\ncontroller.quorum.voters=1@localhost:9093\nmetadata.log.dir=/tmp/x\n"
	cfg, _, err := ParseProperties([]byte(base + "krabka.log.level=WARN\n"))
	if err != nil || cfg.LogLevel != "warn" {
		t.Fatalf("krabka.log.level=WARN: LogLevel %q, %v; want warn", cfg.LogLevel, err)
	}
	if got := cfg.Properties()["krabka.log.level"]; got != "warn" {
		t.Errorf("Properties()[krabka.log.level] = %q, want warn", got)
	}
	if _, _, err := ParseProperties([]byte(base + "krabka.log.level=loud\n")); err == nil || !strings.Contains(err.Error(), "krabka.log.level") || !strings.Contains(err.Error(), "must be debug, info, warn or error") {
		t.Errorf("krabka.log.level=loud: %v, want an error naming the key", err)
	}
	bad := ForTests(1, t.TempDir())
	bad.LogLevel = "loud"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "krabka.log.level") {
		t.Errorf("Validate with LogLevel loud: %v, want an error naming krabka.log.level", err)
	}

	cfg = ForTests(1, t.TempDir())
	var logs logBuffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.LogLevel = "warn"
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := logs.count(`"level":"INFO"`) + logs.count(`"level":"DEBUG"`); n != 0 {
		t.Errorf("LogLevel warn: %d INFO or DEBUG lines reached the Logger", n)
	}
}
