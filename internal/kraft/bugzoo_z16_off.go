//go:build !bugzoo_z16

package kraft

// bugZ16 is off: the core is correct (RELIABILITY.md §6, bugzoo.go).
const bugZ16 = false
