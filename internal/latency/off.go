//go:build !krabkalatency

package latency

import "time"

// Enabled reports whether this is a measuring build.
const Enabled = false

// Stamp is a point in time in a measuring build, and nothing otherwise.
type Stamp struct{}

// Now returns the current time in a measuring build.
func Now() Stamp { return Stamp{} }

// Between records span as lasting from from to to.
func Between(span string, from, to Stamp) {}

// Since records span as lasting from from to now.
func Since(span string, from Stamp) {}

// Record records one occurrence of span lasting d.
func Record(span string, d time.Duration) {}

// Count records n for series, a quantity per event (a batch's size).
func Count(series string, n int) {}
