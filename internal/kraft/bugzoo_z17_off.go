//go:build !bugzoo_z17

package kraft

// bugZ17 is off: the core is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ17 = false
