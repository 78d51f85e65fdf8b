//go:build bugzoo_z13

package kraft

// bugZ13 re-injects bug-zoo entry Z13 (RELIABILITY.md §6); see bugzoo.go.
const bugZ13 = true
