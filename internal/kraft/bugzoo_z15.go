//go:build bugzoo_z15

package kraft

// bugZ15 re-injects bug-zoo entry Z15 (RELIABILITY.md §6); see bugzoo.go.
const bugZ15 = true
