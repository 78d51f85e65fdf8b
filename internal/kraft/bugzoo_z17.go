//go:build bugzoo_z17

package kraft

// bugZ17 re-injects bug-zoo entry Z17 (RELIABILITY.md §6); see bugzoo.go.
const bugZ17 = true
