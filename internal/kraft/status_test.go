package kraft_test

import (
	"reflect"
	"testing"

	"github.com/krabka-go/krabka/internal/kraft"
)

// TestBriefIsStatusWithoutReplicas: Brief reports what Status does except
// the leader's per-replica progress, on every role, and allocates nothing
// (the runtime calls it after every input); Status allocates its Replicas
// once.
func TestBriefIsStatusWithoutReplicas(t *testing.T) {
	c := newCluster(t, 3, 1, 1)
	c.elect(1)
	for id := kraft.NodeID(1); id <= 4; id++ {
		n := c.node(id)
		full, brief := n.Status(), n.Brief()
		if id == 1 && len(full.Replicas) != 4 {
			t.Fatalf("leader's Status holds %d replicas, want 4", len(full.Replicas))
		}
		full.Replicas = nil
		if !reflect.DeepEqual(brief, full) {
			t.Errorf("node %d: Brief() = %+v, want Status() without Replicas %+v", id, brief, full)
		}
		if a := testing.AllocsPerRun(100, func() { _ = n.Brief() }); a != 0 {
			t.Errorf("node %d: Brief allocates %v times, want 0", id, a)
		}
	}
	if a := testing.AllocsPerRun(100, func() { _ = c.node(1).Status() }); a != 1 {
		t.Errorf("the leader's Status allocates %v times, want 1 (its Replicas)", a)
	}
}
