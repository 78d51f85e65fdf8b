//go:build bugzoo_z4

package kraft

// bugZ4 re-injects bug-zoo entry Z4 (RELIABILITY.md §6); see bugzoo.go.
const bugZ4 = true
