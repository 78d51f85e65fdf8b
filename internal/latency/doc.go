// Package latency measures where a node's time goes under load, in a
// measuring build only: `go build -tags krabkalatency ./cmd/krabka`.
//
// Profiles say where CPU goes, and execution traces follow one write at a
// time (bench/internal/hops), but neither shows the distribution of a span
// of wall-clock time over hundreds of thousands of writes: how long a
// request waits between being read and being answered, an answer between
// being handed to its connection and being written, a follower between two
// Fetches, an fsync as the engine sees it on a loaded machine. The hot
// paths stamp those points with [Now] and record the spans with [Between]
// and [Since]; a measuring build prints every span's count, mean and
// percentiles to standard error every five seconds, and starts again.
//
// In a normal build [Stamp] is an empty struct and every function is an
// empty one the compiler removes, so the stamps cost neither memory nor
// time; code that would loop only to record guards itself with [Enabled].
package latency
