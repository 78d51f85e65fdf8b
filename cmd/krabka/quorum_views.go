package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/raft"
)

// viewTimeout bounds asking every controller for its own view once no
// leader answered.
const viewTimeout = 5 * time.Second

// nodeView is one controller's answer to "what do you believe": its view,
// or why it gave none.
type nodeView struct {
	addr string
	view wire.NodeView
	err  error
}

// collectNodeViews asks each controller at addrs for its own view of the
// quorum: a DescribeQuorum that a controller which is not the leader
// answers with NOT_LEADER_OR_FOLLOWER and its view in a tagged field (a
// leader answers with the quorum, which gives its view too).
func collectNodeViews(ctx context.Context, cs controllers) []nodeView {
	views := make([]nodeView, 0, len(cs.addrs))
	for _, addr := range cs.addrs {
		v, err := askNodeView(ctx, addr, cs.security)
		views = append(views, nodeView{addr: addr, view: v, err: err})
	}
	return views
}

// askNodeView asks the controller at addr for its view.
func askNodeView(ctx context.Context, addr string, sec raft.ClientSecurity) (wire.NodeView, error) {
	c, err := dialController(ctx, addr, sec)
	if err != nil {
		return wire.NodeView{}, err
	}
	defer c.Close()
	req, err := describeQuorumRequest(c)
	if err != nil {
		return wire.NodeView{}, err
	}
	resp, err := c.request(ctx, req)
	if err != nil {
		return wire.NodeView{}, err
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	if len(dq.Topics) != 1 || len(dq.Topics[0].Partitions) != 1 {
		return wire.NodeView{}, fmt.Errorf("controller %s: DescribeQuorum answer lacks %s-%d", addr, wire.MetadataTopic, wire.MetadataPartition)
	}
	p := &dq.Topics[0].Partitions[0]
	if dq.ErrorCode == 0 && p.ErrorCode == 0 {
		// The leader: it answered with the quorum.
		v := wire.NodeView{NodeID: p.LeaderID, Role: "Leader", Epoch: p.LeaderEpoch, LeaderID: p.LeaderID, HighWatermark: p.HighWatermark}
		if r, ok := findReplica(p.CurrentVoters, p.LeaderID); ok {
			v.LogEndOffset = r.LogEndOffset
		}
		return v, nil
	}
	v, err := wire.NodeViewOf(p)
	if errors.Is(err, wire.ErrNoNodeView) {
		return wire.NodeView{}, fmt.Errorf("%w (DescribeQuorum: %v)", errNoView, wire.ErrorForCode(max(dq.ErrorCode, p.ErrorCode)))
	}
	return v, err
}

// errNoView is askNodeView's error for a controller that answered without
// a view of its own (not a Krabka controller, or an older one).
var errNoView = errors.New("answers without a view of its own")

// printNodeViews prints the view of each controller that gave one, in
// order, and says which answered without one; the unreachable ones are
// named by the error that ends the command.
func printNodeViews(w io.Writer, views []nodeView) error {
	var b strings.Builder
	b.WriteString("No quorum leader answered. What each reachable controller believes:\n")
	for _, v := range views {
		if errors.Is(v.err, errNoView) {
			fmt.Fprintf(&b, "Controller %s: %v\n", v.addr, v.err)
		}
		if v.err != nil {
			continue
		}
		leader := fmt.Sprint(v.view.LeaderID)
		if v.view.LeaderID < 0 {
			leader = "none"
		}
		fmt.Fprintf(&b, "Controller %s: NodeId %d, Role %s, Epoch %d, Leader %s, LogEndOffset %d, HighWatermark %d\n",
			v.addr, v.view.NodeID, v.view.Role, v.view.Epoch, leader, v.view.LogEndOffset, v.view.HighWatermark)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
