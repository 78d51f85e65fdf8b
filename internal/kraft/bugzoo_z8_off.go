//go:build !bugzoo_z8

package kraft

// bugZ8 is off: the core is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ8 = false
