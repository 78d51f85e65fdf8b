//go:build !bugzoo_z15

package kraft

// bugZ15 is off: the core is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ15 = false
