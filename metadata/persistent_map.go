package metadata

import "iter"

// pmap is a persistent (immutable) ordered map: an AVL tree whose updates
// copy only the path from the root to the changed node and share every
// other node with the map they were derived from. Set and Delete cost
// O(log n) time and O(log n) new nodes; the old map stays valid and
// unchanged, so any number of goroutines may read any version without
// locks.
//
// The zero pmap is not usable: make one with newPMap, which fixes the
// key order. A pmap is a small value (root, size, comparator) and is
// passed and stored by value.
//
// Transient updates: with and without take an edit token. Nodes are
// stamped with the token that created them, and an update under the same
// token changes such nodes in place instead of copying them. This makes a
// run of updates under one token (a Delta replaying a batch, a snapshot
// load) allocate only what is new. The owner of a token must stop using
// it (take a new one) before any map that holds its nodes is shared:
// from then on those nodes are never written again. A nil token makes
// every update copy its path.
type pmap[K, V any] struct {
	root *pnode[K, V]
	size int
	cmp  func(a, b K) int
}

// pnode is a tree node. Nodes are never modified once they are reachable
// from a published pmap.
type pnode[K, V any] struct {
	key         K
	val         V
	left, right *pnode[K, V]
	height      int8
	edit        *editToken
}

// editToken identifies a run of transient updates; see pmap. It has a
// size so that every new token is a distinct pointer.
type editToken struct{ _ byte }

// newPMap returns an empty map ordered by cmp, which must be a strict
// total order (negative, zero or positive like cmp.Compare).
func newPMap[K, V any](cmp func(a, b K) int) pmap[K, V] {
	return pmap[K, V]{cmp: cmp}
}

// Len returns the number of entries.
func (m pmap[K, V]) Len() int { return m.size }

// Get returns the value stored under k.
func (m pmap[K, V]) Get(k K) (V, bool) {
	n := m.root
	for n != nil {
		c := m.cmp(k, n.key)
		switch {
		case c < 0:
			n = n.left
		case c > 0:
			n = n.right
		default:
			return n.val, true
		}
	}
	var zero V
	return zero, false
}

// Set returns a map with k bound to v; m is unchanged.
func (m pmap[K, V]) Set(k K, v V) pmap[K, V] { return m.with(k, v, nil) }

// Delete returns a map without k; m is unchanged. Deleting an absent key
// returns m itself.
func (m pmap[K, V]) Delete(k K) pmap[K, V] { return m.without(k, nil) }

// with returns a map with k bound to v. Nodes of m stamped with tok may
// be changed in place; every other node of m is left unchanged.
func (m pmap[K, V]) with(k K, v V, tok *editToken) pmap[K, V] {
	return m.withLeaf(k, v, tok, nil)
}

// withLeaf is with that, when k is new, makes leaf the node of k instead
// of allocating one. leaf, when not nil, must be a zero node no map
// holds.
func (m pmap[K, V]) withLeaf(k K, v V, tok *editToken, leaf *pnode[K, V]) pmap[K, V] {
	root, added := m.insert(m.root, k, v, tok, leaf)
	m.root = root
	if added {
		m.size++
	}
	return m
}

// without returns a map without k, changing in place only nodes stamped
// with tok. Deleting an absent key returns m itself.
func (m pmap[K, V]) without(k K, tok *editToken) pmap[K, V] {
	root, removed := m.remove(m.root, k, tok)
	if !removed {
		return m
	}
	m.root = root
	m.size--
	return m
}

// All iterates over the entries in ascending key order.
func (m pmap[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		walk(m.root, yield)
	}
}

// Values iterates over the values in ascending key order.
func (m pmap[K, V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		walk(m.root, func(_ K, v V) bool { return yield(v) })
	}
}

func walk[K, V any](n *pnode[K, V], yield func(K, V) bool) bool {
	for n != nil {
		if !walk(n.left, yield) || !yield(n.key, n.val) {
			return false
		}
		n = n.right
	}
	return true
}

func height[K, V any](n *pnode[K, V]) int8 {
	if n == nil {
		return 0
	}
	return n.height
}

// mk allocates a node over two subtrees whose heights differ by at most
// one.
func mk[K, V any](k K, v V, l, r *pnode[K, V], tok *editToken) *pnode[K, V] {
	return &pnode[K, V]{key: k, val: v, left: l, right: r, height: max(height(l), height(r)) + 1, edit: tok}
}

// rebuild returns node n with children l and r: n itself, changed in
// place, when tok owns it and no rotation is needed, else new nodes.
func rebuild[K, V any](n, l, r *pnode[K, V], tok *editToken) *pnode[K, V] {
	hl, hr := height(l), height(r)
	if tok != nil && n.edit == tok && hl <= hr+1 && hr <= hl+1 {
		n.left, n.right, n.height = l, r, max(hl, hr)+1
		return n
	}
	return balance(n, n.key, n.val, l, r, tok)
}

// balance builds a node (k, v) over l and r, whose heights may differ by
// two, with at most two rotations. Nodes stamped with tok (n, whose entry
// is k and v, when it is not nil, and the roots it rotates) are rewritten
// in place rather than copied.
func balance[K, V any](n *pnode[K, V], k K, v V, l, r *pnode[K, V], tok *editToken) *pnode[K, V] {
	hl, hr := height(l), height(r)
	switch {
	case hl > hr+1:
		if height(l.left) >= height(l.right) {
			inner := node(n, k, v, l.right, r, tok)
			return node(l, l.key, l.val, l.left, inner, tok)
		}
		lr := l.right
		a := node(l, l.key, l.val, l.left, lr.left, tok)
		b := node(n, k, v, lr.right, r, tok)
		return node(lr, lr.key, lr.val, a, b, tok)
	case hr > hl+1:
		if height(r.right) >= height(r.left) {
			inner := node(n, k, v, l, r.left, tok)
			return node(r, r.key, r.val, inner, r.right, tok)
		}
		rl := r.left
		a := node(n, k, v, l, rl.left, tok)
		b := node(r, r.key, r.val, rl.right, r.right, tok)
		return node(rl, rl.key, rl.val, a, b, tok)
	}
	return node(n, k, v, l, r, tok)
}

// node returns a node (k, v) over l and r, whose heights differ by at
// most one: n rewritten when tok owns it, else a new node.
func node[K, V any](n *pnode[K, V], k K, v V, l, r *pnode[K, V], tok *editToken) *pnode[K, V] {
	if n != nil && tok != nil && n.edit == tok {
		n.key, n.val, n.left, n.right, n.height = k, v, l, r, max(height(l), height(r))+1
		return n
	}
	return mk(k, v, l, r, tok)
}

func (m pmap[K, V]) insert(n *pnode[K, V], k K, v V, tok *editToken, leaf *pnode[K, V]) (*pnode[K, V], bool) {
	if n == nil {
		if leaf == nil {
			leaf = new(pnode[K, V])
		}
		*leaf = pnode[K, V]{key: k, val: v, height: 1, edit: tok}
		return leaf, true
	}
	c := m.cmp(k, n.key)
	switch {
	case c < 0:
		l, added := m.insert(n.left, k, v, tok, leaf)
		return rebuild(n, l, n.right, tok), added
	case c > 0:
		r, added := m.insert(n.right, k, v, tok, leaf)
		return rebuild(n, n.left, r, tok), added
	}
	if tok != nil && n.edit == tok {
		n.key, n.val = k, v
		return n, false
	}
	c2 := *n
	c2.key, c2.val, c2.edit = k, v, tok
	return &c2, false
}

func (m pmap[K, V]) remove(n *pnode[K, V], k K, tok *editToken) (*pnode[K, V], bool) {
	if n == nil {
		return nil, false
	}
	c := m.cmp(k, n.key)
	switch {
	case c < 0:
		l, ok := m.remove(n.left, k, tok)
		if !ok {
			return n, false
		}
		return rebuild(n, l, n.right, tok), true
	case c > 0:
		r, ok := m.remove(n.right, k, tok)
		if !ok {
			return n, false
		}
		return rebuild(n, n.left, r, tok), true
	}
	if n.left == nil {
		return n.right, true
	}
	if n.right == nil {
		return n.left, true
	}
	sk, sv, r := removeMin(n.right, tok)
	if tok != nil && n.edit == tok {
		n.key, n.val = sk, sv
		return rebuild(n, n.left, r, tok), true
	}
	return balance(nil, sk, sv, n.left, r, tok), true
}

// removeMin returns the smallest entry of the non-empty tree n and the
// tree without it.
func removeMin[K, V any](n *pnode[K, V], tok *editToken) (K, V, *pnode[K, V]) {
	if n.left == nil {
		return n.key, n.val, n.right
	}
	k, v, l := removeMin(n.left, tok)
	return k, v, rebuild(n, l, n.right, tok)
}
