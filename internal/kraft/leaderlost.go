package kraft

import (
	"context"
	"log/slog"
)

// Losing the leader without waiting for the fetch timeout.
//
// Kafka's follower notices a dead leader only when its fixed fetch timer
// (Tf) expires, and the followers' timers were last restarted by the same
// leader's answers, so several often expire together and split the vote.
// Two changes shorten this:
//
//   - [Node.ConnectionLost]: the runtime saw the connection to a peer
//     refused or reset. For the leader, a follower knows at once what the
//     timer would tell it a Tf later. A partition resets nothing, so it
//     still fails over after the fetch timeout.
//   - The fetch timer stays Kafka's fixed Tf: once it expires, the
//     follower counts the leader as no longer heard. Its pre-vote, though,
//     starts a random delay later.
//
// A follower that lost its leader either way grants pre-votes (KIP-996
// refuses them only while the leader is heard) and starts its own after a
// random delay in [0, Config.CampaignJitter], so that one of several followers
// usually pre-votes first and wins without a split. Safety does not rest
// on the report being true: a pre-vote is non-binding, and followers that
// still hear the leader refuse it, so a spurious report costs one lost
// pre-vote round and the follower goes back to fetching. Any successful
// answer from the leader clears the mark.

// campaignDelay draws the delay before a voter that lost its leader
// starts a pre-vote: uniform in [0, CampaignJitter] ms.
func (n *Node) campaignDelay() Instant {
	if n.cfg.CampaignJitter <= 0 {
		return 0
	}
	spread := uint64(n.cfg.CampaignJitter.Milliseconds()) + 1
	return Instant(n.s.rng.Uint64() % spread)
}

// restartFetchTimer starts Tf afresh; the pre-vote is due a random delay
// after it expires.
func (n *Node) restartFetchTimer() {
	f := &n.s.follower
	f.TimerStart = n.s.now
	f.FetchDeadline = n.s.now.Add(n.cfg.FetchTimeout) + n.campaignDelay()
}

// hearsLeader reports whether this Follower counts its leader as heard: it
// had a successful answer in this epoch, its fetch timer has not expired,
// and the leader is not known lost.
func (n *Node) hearsLeader() bool {
	f := &n.s.follower
	return f.HasFetched && !f.LeaderLost && n.s.now < f.TimerStart.Add(n.cfg.FetchTimeout)
}

// leaderLost marks the leader of this Follower lost and, on a voter,
// schedules the pre-vote at campaignAt.
func (n *Node) leaderLost(reason string, campaignAt Instant) {
	f := &n.s.follower
	f.LeaderLost = true
	f.FetchDeadline = campaignAt
	n.logger.LogAttrs(context.Background(), slog.LevelInfo, "leader lost",
		slog.String(keyReason, reason), slog.Int(keyLeaderID, int(n.s.leaderID)),
		slog.Int(keyEpoch, int(n.s.epoch)), slog.Int64(keyBackoffMs, int64(max(0, campaignAt-n.s.now))))
}

// heardFromLeader records a successful Fetch or FetchSnapshot answer from
// the leader: the fetch timer restarts and the leader counts as heard.
func (n *Node) heardFromLeader() {
	f := &n.s.follower
	f.HasFetched = true
	f.LeaderLost = false
	n.restartFetchTimer()
}

// ConnectionLost tells the node that the runtime's connection to peer was
// refused or reset (a dial failure, EOF or ECONNRESET; not a timeout). A
// request in flight to peer is forgotten and the next one waits the retry
// backoff, so that reconnect attempts to a dead peer do not spin. If peer
// is the leader this Follower follows, the leader is marked lost: a voter
// grants pre-votes at once and starts its own after a short random delay;
// an observer asks a bootstrap server for the leader. A later successful
// fetch from the leader undoes this. Like [Node.Tick], it may be called
// while a Ready is outstanding.
func (n *Node) ConnectionLost(now Instant, peer NodeID) {
	n.advanceClock(now)
	if peer < 0 || peer == n.me.ID {
		return
	}
	p := &n.s.peers[n.peerIndex(peer)]
	p.InFlight = 0
	p.BackoffUntil = max(p.BackoffUntil, n.s.now.Add(n.cfg.RetryBackoff))
	if n.s.role == Follower && n.s.leaderID == peer && !n.s.follower.LeaderLost {
		campaignAt := n.s.now + n.campaignDelay()
		if n.isVoter() {
			campaignAt = min(campaignAt, n.s.follower.FetchDeadline)
		}
		n.leaderLost("connection lost", campaignAt)
	}
	n.poll()
}
