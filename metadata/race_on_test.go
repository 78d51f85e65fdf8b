//go:build race

package metadata_test

// raceEnabled: the race detector changes what the compiler keeps off the
// heap, so allocation counts are checked only without it.
const raceEnabled = true
