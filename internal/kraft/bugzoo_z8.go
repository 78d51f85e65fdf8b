//go:build bugzoo_z8

package kraft

// bugZ8 re-injects bug-zoo entry Z8 (RELIABILITY.md §6); see bugzoo.go.
const bugZ8 = true
