package kraft

import "testing"

// KafkaRaftClient.strictExponentialElectionBackoffMs: position 0 waits 0;
// an unlisted voter waits the maximum; otherwise
// min(max, (max >> (n-1)) << (position-1)).
func TestElectionBackoff(t *testing.T) {
	tests := []struct {
		pos, n int
		want   Instant
	}{
		{0, 2, 0},
		{1, 2, 500},
		{-1, 2, 1000},
		{5, 2, 1000},
		{1, 4, 125},
		{2, 4, 250},
		{3, 4, 500},
		{0, 1, 0},
	}
	for _, tt := range tests {
		if got := electionBackoff(tt.pos, tt.n, 1000); got != tt.want {
			t.Errorf("electionBackoff(%d, %d, 1000) = %d, want %d", tt.pos, tt.n, got, tt.want)
		}
	}
}
