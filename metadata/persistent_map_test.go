package metadata

import (
	"bytes"
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// checkAVL verifies the ordering, balance and height invariants of a
// tree and returns its size.
func checkAVL[K, V any](t *rapid.T, m pmap[K, V], n *pnode[K, V], lo, hi *K) int {
	if n == nil {
		return 0
	}
	if lo != nil && m.cmp(n.key, *lo) <= 0 || hi != nil && m.cmp(n.key, *hi) >= 0 {
		t.Fatalf("key out of order")
	}
	hl, hr := height(n.left), height(n.right)
	if hl-hr > 1 || hr-hl > 1 {
		t.Fatalf("unbalanced node: heights %d and %d", hl, hr)
	}
	if n.height != max(hl, hr)+1 {
		t.Fatalf("height %d, want %d", n.height, max(hl, hr)+1)
	}
	return 1 + checkAVL(t, m, n.left, lo, &n.key) + checkAVL(t, m, n.right, &n.key, hi)
}

// TestPMapModel runs random Set, Delete and Get sequences against a Go
// map, with and without transient edit tokens. Every published version
// (a copy taken before the token is replaced) must keep its contents
// while later updates go on: the persistence property.
func TestPMapModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type version struct {
			m     pmap[int, int]
			model map[int]int
		}
		cur := version{m: newPMap[int, int](cmp.Compare[int]), model: map[int]int{}}
		var tok *editToken
		if rapid.Bool().Draw(t, "transient") {
			tok = new(editToken)
		}
		var history []version
		keys := rapid.IntRange(-50, 50)
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				k, v := keys.Draw(t, "k"), rapid.Int().Draw(t, "v")
				cur.m = cur.m.with(k, v, tok)
				cur.model[k] = v
			case 2:
				k := keys.Draw(t, "k")
				cur.m = cur.m.without(k, tok)
				delete(cur.model, k)
			case 3:
				history = append(history, version{m: cur.m, model: maps.Clone(cur.model)})
				if tok != nil {
					tok = new(editToken)
				}
			}
			k := keys.Draw(t, "probe")
			got, ok := cur.m.Get(k)
			want, wok := cur.model[k]
			if ok != wok || got != want {
				t.Fatalf("Get(%d) = %d, %v; want %d, %v", k, got, ok, want, wok)
			}
		}
		history = append(history, cur)
		for i, h := range history {
			if n := checkAVL(t, h.m, h.m.root, nil, nil); n != h.m.Len() || n != len(h.model) {
				t.Fatalf("version %d: %d nodes, Len %d, model %d", i, n, h.m.Len(), len(h.model))
			}
			var gotKeys []int
			for k, v := range h.m.All() {
				if h.model[k] != v {
					t.Fatalf("version %d: key %d = %d, model %d", i, k, v, h.model[k])
				}
				gotKeys = append(gotKeys, k)
			}
			if want := slices.Sorted(maps.Keys(h.model)); !slices.Equal(gotKeys, want) {
				t.Fatalf("version %d: keys %v, want %v", i, gotKeys, want)
			}
		}
	})
}

// TestPMapTransientAllocs: updates under one token allocate only new
// nodes; a replaced value under the owning token allocates nothing.
func TestPMapTransientAllocs(t *testing.T) {
	tok := new(editToken)
	m := newPMap[int, int](cmp.Compare[int])
	for i := range 10000 {
		m = m.with(i, i, tok)
	}
	if allocs := testing.AllocsPerRun(100, func() { m = m.with(5000, 1, tok) }); allocs != 0 {
		t.Errorf("owned update allocates %v times, want 0", allocs)
	}
	frozen := m
	tok = new(editToken)
	m = m.with(5000, 2, tok)
	if m.root == frozen.root {
		t.Error("update under a new token changed the frozen root in place")
	}
	if v, _ := frozen.Get(5000); v != 1 {
		t.Errorf("frozen map changed: %d", v)
	}
}

// Keys inserted in order under one token rotate the tree at almost every
// insert; the rotations rewrite the nodes the token owns, so the run
// allocates one node per key.
func TestPMapTransientRotationsReuseNodes(t *testing.T) {
	const n = 1000
	allocs := testing.AllocsPerRun(5, func() {
		tok := new(editToken)
		m := newPMap[int, int](cmp.Compare[int])
		for i := range n {
			m = m.with(i, i, tok)
		}
	})
	if allocs > n+1 { // the nodes and the token
		t.Errorf("%d ordered inserts under one token allocate %.0f times, want %d", n, allocs, n+1)
	}
}

// TestPMapPathCopy checks that an update allocates only a path: after
// one Set on a map of 100,000 keys, at most O(log n) nodes are new.
func TestPMapPathCopy(t *testing.T) {
	m := newPMap[int, int](cmp.Compare[int])
	for i := range 100000 {
		m = m.Set(i, i)
	}
	old := map[*pnode[int, int]]bool{}
	var collect func(n *pnode[int, int], into map[*pnode[int, int]]bool)
	collect = func(n *pnode[int, int], into map[*pnode[int, int]]bool) {
		if n != nil {
			into[n] = true
			collect(n.left, into)
			collect(n.right, into)
		}
	}
	collect(m.root, old)
	for _, op := range []string{"set", "delete", "insert"} {
		var m2 pmap[int, int]
		switch op {
		case "set":
			m2 = m.Set(54321, -1)
		case "delete":
			m2 = m.Delete(54321)
		case "insert":
			m2 = m.Set(-5, 5)
		}
		now := map[*pnode[int, int]]bool{}
		collect(m2.root, now)
		fresh := 0
		for n := range now {
			if !old[n] {
				fresh++
			}
		}
		if limit := 2 * int(m.root.height); fresh > limit {
			t.Errorf("%s: %d new nodes, want at most %d", op, fresh, limit)
		}
		if v, _ := m.Get(54321); v != 54321 || m.Len() != 100000 {
			t.Errorf("%s changed the original map", op)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = m.Set(777, 1) }); allocs > float64(m.root.height)+1 {
		t.Errorf("Set allocates %v times, want at most %d", allocs, m.root.height+1)
	}
}

// TestCompareUUIDOrdersBytes checks that compareUUID orders ids exactly
// as bytes.Compare orders their bytes, the order snapshots are written in.
func TestCompareUUIDOrdersBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	edge := [][16]byte{{}, {15: 1}, {7: 1}, {8: 1}, {0: 0x80}, {8: 0xff}}
	for range 2000 {
		var u [16]byte
		for i := range u {
			// Few distinct bytes, so that ids often share a prefix.
			u[i] = byte(r.IntN(3)) * 0x7f
		}
		edge = append(edge, u)
	}
	for _, a := range edge[:200] {
		for _, b := range edge {
			if got, want := compareUUID(a, b), bytes.Compare(a[:], b[:]); got != want {
				t.Fatalf("compareUUID(%x, %x) = %d, want %d", a, b, got, want)
			}
		}
	}
}
