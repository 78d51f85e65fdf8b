//go:build !bugzoo_z13

package kraft

// bugZ13 is off: the core is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ13 = false
