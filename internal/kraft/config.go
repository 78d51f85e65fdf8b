package kraft

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/krabka-go/krabka/internal/kraft/quorum"
)

// Config configures a [Node]. Build it from [DefaultConfig] and set the
// identity and voters; [Config.Validate] reports every problem and changes
// nothing.
type Config struct {
	// ID is this replica's node.id.
	ID NodeID
	// DirectoryID is the directory.id of this replica's metadata log
	// directory (meta.properties); zero when the static, kraft.version 0
	// configuration carries none.
	DirectoryID UUID
	// Voters is the static voter set (controller.quorum.voters,
	// kraft.version 0). A Voters control record in the log or a snapshot
	// supersedes it (KIP-853); with dynamic voters it may be empty, and the
	// replica starts as an observer that finds the leader through
	// BootstrapServers.
	Voters []ReplicaKey
	// BootstrapServers are the nodes an Unattached observer fetches from
	// to discover the leader (controller.quorum.bootstrap.servers). Empty
	// means the voters.
	BootstrapServers []NodeID

	// ElectionTimeout mirrors controller.quorum.election.timeout.ms (1000):
	// the base of the randomised election timer [Te, 2Te).
	ElectionTimeout time.Duration
	// FetchTimeout mirrors controller.quorum.fetch.timeout.ms (2000): a
	// voter that has not heard from its leader for this long starts a
	// pre-vote; the leader's check-quorum timer is 1.5 times this.
	FetchTimeout time.Duration
	// ElectionBackoffMax mirrors controller.quorum.election.backoff.max.ms
	// (1000); used for the successor backoff after EndQuorumEpoch
	// (KafkaRaftClient.strictExponentialElectionBackoffMs).
	ElectionBackoffMax time.Duration
	// CampaignJitter bounds the random delay between losing the leader
	// (the fetch timer expired, or the connection was lost) and starting a
	// pre-vote: uniform in [0, CampaignJitter]. Krabka's, not Kafka's
	// (which starts at once); the default is a quarter of the default
	// election timeout. 0 starts at once.
	CampaignJitter time.Duration
	// RequestTimeout mirrors controller.quorum.request.timeout.ms (2000): an
	// outstanding request older than this frees its destination.
	RequestTimeout time.Duration
	// RetryBackoff mirrors controller.quorum.retry.backoff.ms (20): the
	// pause before re-sending to a destination that failed.
	RetryBackoff time.Duration
	// FetchMaxWait is the MaxWaitMs this replica puts in its Fetch requests
	// (500, Kafka's MAX_FETCH_WAIT_MS).
	FetchMaxWait time.Duration
	// FetchMaxBytes mirrors controller.quorum.fetch.max.bytes (1 MiB).
	FetchMaxBytes int32
	// FetchSnapshotMaxBytes mirrors controller.quorum.fetch.snapshot.max.bytes
	// (1 MiB).
	FetchSnapshotMaxBytes int32
	// MaxSnapshotBytes caps the total size of a snapshot this replica
	// downloads (0: no cap). Kafka has none; a runtime sets its disk's
	// limit, and an answer announcing more restarts the download instead
	// of failing the runtime's write.
	MaxSnapshotBytes int64

	// Seed seeds the node's random source (election jitter, bootstrap
	// server choice). Equal seeds and equal inputs give equal outputs.
	Seed uint64
	// Logger receives the core's log lines; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns Kafka 4.3.1's defaults with no identity and no
// voters.
func DefaultConfig() Config {
	return Config{
		ID:                    NoNode,
		ElectionTimeout:       1000 * time.Millisecond,
		FetchTimeout:          2000 * time.Millisecond,
		ElectionBackoffMax:    1000 * time.Millisecond,
		CampaignJitter:        250 * time.Millisecond,
		RequestTimeout:        2000 * time.Millisecond,
		RetryBackoff:          20 * time.Millisecond,
		FetchMaxWait:          500 * time.Millisecond,
		FetchMaxBytes:         1 << 20,
		FetchSnapshotMaxBytes: 1 << 20,
	}
}

// Validate reports every problem with c, joined with [errors.Join]. It
// does not modify c.
func (c Config) Validate() error {
	var errs []error
	if c.ID < 0 {
		errs = append(errs, fmt.Errorf("kraft: ID (%d) must be non-negative", c.ID))
	}
	if _, err := NewVoterSetFromKeys(c.Voters); err != nil {
		errs = append(errs, fmt.Errorf("kraft: Voters: %w", err))
	}
	if len(c.Voters) == 0 && len(c.BootstrapServers) == 0 {
		errs = append(errs, errors.New("kraft: Voters or BootstrapServers must name at least one node, or the replica can find no leader"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ElectionTimeout", c.ElectionTimeout}, {"FetchTimeout", c.FetchTimeout},
		{"ElectionBackoffMax", c.ElectionBackoffMax}, {"RequestTimeout", c.RequestTimeout},
		{"RetryBackoff", c.RetryBackoff}, {"FetchMaxWait", c.FetchMaxWait},
	} {
		if d.v < time.Millisecond {
			errs = append(errs, fmt.Errorf("kraft: %s (%v) must be at least 1ms", d.name, d.v))
		}
	}
	if c.FetchMaxWait >= c.FetchTimeout {
		errs = append(errs, fmt.Errorf("kraft: FetchMaxWait (%v) must be below FetchTimeout (%v), or a parked fetch outlives the follower's patience", c.FetchMaxWait, c.FetchTimeout))
	}
	if c.CampaignJitter < 0 {
		errs = append(errs, fmt.Errorf("kraft: CampaignJitter (%v) must not be negative (0: no delay)", c.CampaignJitter))
	}
	if c.FetchMaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("kraft: FetchMaxBytes (%d) must be positive", c.FetchMaxBytes))
	}
	if c.FetchSnapshotMaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("kraft: FetchSnapshotMaxBytes (%d) must be positive", c.FetchSnapshotMaxBytes))
	}
	if c.MaxSnapshotBytes < 0 {
		errs = append(errs, fmt.Errorf("kraft: MaxSnapshotBytes (%d) must not be negative (0: no cap)", c.MaxSnapshotBytes))
	}
	return errors.Join(errs...)
}

// NewVoterSetFromKeys builds a voter set; see [quorum.NewVoterSet].
func NewVoterSetFromKeys(keys []ReplicaKey) (VoterSet, error) {
	return quorum.NewVoterSet(keys...)
}
