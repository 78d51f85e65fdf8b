package kraft_test

import (
	"strings"
	"testing"
	"time"

	"github.com/krabka-go/krabka/internal/kraft"
)

// Validate reports every problem at once, not only the first.
func TestConfigValidate(t *testing.T) {
	ok := kraft.DefaultConfig()
	ok.ID = 1
	ok.Voters = keys(1, 2, 3)
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	bad := ok
	bad.ID = -1
	bad.Voters = keys(1, 1)
	bad.FetchMaxWait = 3 * time.Second
	bad.RetryBackoff = 0
	bad.CampaignJitter = -time.Millisecond
	err := bad.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"ID (-1)", "Voters:", "FetchMaxWait", "RetryBackoff", "CampaignJitter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, want it to mention %q", err, want)
		}
	}
	observer := ok
	observer.Voters = nil
	if err := observer.Validate(); err == nil {
		t.Error("no voters and no bootstrap servers accepted")
	}
	observer.BootstrapServers = []kraft.NodeID{1}
	if err := observer.Validate(); err != nil {
		t.Errorf("observer with bootstrap servers: %v", err)
	}
}
