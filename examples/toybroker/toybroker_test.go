package toybroker_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/sharedtest"
)

// TestToyBroker runs the toy broker as processes: a controller with the
// router, and a broker that follows it as an observer, registers through
// the controller listener and creates a topic. The broker prints what its
// own image holds once it has caught up: its registration with a broker
// epoch, and the topic's partitions led by it.
func TestToyBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "toybroker")
	build := exec.Command("go", "build", "-o", bin, "./cmd/toybroker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln := sharedtest.ListenFixed(t)
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()

	var controllerOut bytes.Buffer
	controller := exec.Command(bin, "controller", "-dir", filepath.Join(dir, "controller"), "-port", fmt.Sprint(port))
	controller.Stdout, controller.Stderr = &controllerOut, &controllerOut
	if err := controller.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- controller.Wait() }()
	defer func() {
		_ = controller.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("controller: %v\n%s", err, controllerOut.String())
			}
		case <-time.After(20 * time.Second):
			_ = controller.Process.Kill()
			t.Error("the controller did not stop on SIGINT")
		}
	}()

	broker := exec.Command(bin, "broker", "-id", "100", "-dir", filepath.Join(dir, "broker"),
		"-voters", fmt.Sprintf("1@127.0.0.1:%d", port), "-topic", "orders", "-partitions", "3")
	out, err := broker.CombinedOutput()
	if err != nil {
		t.Fatalf("broker: %v\n%s\ncontroller:\n%s", err, out, controllerOut.String())
	}
	var lines []string
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	want := []string{
		"registered broker 100 with broker epoch ",
		"topic orders has 3 partitions; partition 0 is led by broker 100",
	}
	if len(lines) != len(want) {
		t.Fatalf("broker printed:\n%s\nwant %d lines", out, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want %q", i+1, lines[i], w)
		}
	}
}
