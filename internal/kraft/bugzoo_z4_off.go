//go:build !bugzoo_z4

package kraft

// bugZ4 is off: the core is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ4 = false
