//go:build bugzoo_z16

package kraft

// bugZ16 re-injects bug-zoo entry Z16 (RELIABILITY.md §6); see bugzoo.go.
const bugZ16 = true
