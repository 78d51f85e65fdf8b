package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A node's own view of the quorum, for the operator when no leader
// answers. Kafka's DescribeQuorum is answered by the leader alone;
// elsewhere its answer is NOT_LEADER_OR_FOLLOWER and says nothing of
// the node. Krabka's answer carries the node's view in a tagged field
// of the partition (DescribeQuorum is flexible from version 0), which
// Kafka's clients skip as an unknown tag.

// NodeViewTag is the tag of the partition's tagged field that holds a
// [NodeView]: far above the tags Kafka's schemas use.
const NodeViewTag = 10000

// maxRoleLen bounds a NodeView's role name.
const maxRoleLen = 32

// NodeView is what one node believes of the quorum.
type NodeView struct {
	NodeID        int32  `json:"nodeId"`
	Role          string `json:"role"`
	Epoch         int32  `json:"epoch"`
	LeaderID      int32  `json:"leaderId"`
	LogEndOffset  int64  `json:"logEndOffset"`
	HighWatermark int64  `json:"highWatermark"`
}

// validate refuses a view no node would send.
func (v NodeView) validate() error {
	switch {
	case v.NodeID < 0:
		return fmt.Errorf("node id %d", v.NodeID)
	case v.Role == "" || len(v.Role) > maxRoleLen:
		return fmt.Errorf("role of %d bytes", len(v.Role))
	case v.Epoch < 0:
		return fmt.Errorf("epoch %d", v.Epoch)
	case v.LeaderID < -1:
		return fmt.Errorf("leader id %d", v.LeaderID)
	case v.LogEndOffset < 0:
		return fmt.Errorf("log end offset %d", v.LogEndOffset)
	case v.HighWatermark < -1:
		return fmt.Errorf("high watermark %d", v.HighWatermark)
	}
	for _, r := range v.Role {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && r != '-' {
			return fmt.Errorf("role %q", v.Role)
		}
	}
	return nil
}

// SetNodeView puts v into p's tagged fields.
func SetNodeView(p *kmsg.DescribeQuorumResponseTopicPartition, v NodeView) error {
	if err := v.validate(); err != nil {
		return fmt.Errorf("wire: node view: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.UnknownTags.Set(NodeViewTag, b)
	return nil
}

// ErrNoNodeView is what [NodeViewOf] returns for a partition without a
// view (an answer of a leader, or of a controller that is not Krabka).
var ErrNoNodeView = errors.New("wire: the answer carries no node view")

// NodeViewOf reads the view in p's tagged fields.
func NodeViewOf(p *kmsg.DescribeQuorumResponseTopicPartition) (NodeView, error) {
	var raw []byte
	found := false
	p.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == NodeViewTag {
			raw, found = b, true
		}
	})
	if !found {
		return NodeView{}, ErrNoNodeView
	}
	return DecodeNodeView(raw)
}

// DecodeNodeView decodes the bytes of a node view, refusing anything a
// node would not send.
func DecodeNodeView(b []byte) (NodeView, error) {
	var v NodeView
	if err := json.Unmarshal(b, &v); err != nil {
		return NodeView{}, fmt.Errorf("wire: node view: %w", err)
	}
	if err := v.validate(); err != nil {
		return NodeView{}, fmt.Errorf("wire: node view: %w", err)
	}
	return v, nil
}
