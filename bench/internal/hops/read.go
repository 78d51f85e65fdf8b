// Package hops breaks the time of one Krabka write down into its hops
// across a 3-node quorum, from Go runtime execution traces taken at the
// same time on the leader and on the followers.
//
// Every trace carries clock snapshots (Go 1.25 and later): a reading of
// the trace clock together with CLOCK_MONOTONIC, which all processes on
// the machine share, so the traces of several processes go on one time
// axis. The syscalls of the goroutines, with their stacks, mark the steps
// of a write: the log append's pwrite, the log's fsync, and the socket
// writes and reads of the quorum's connections.
package hops

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/exp/trace"
)

// Kind is what a syscall did.
type Kind int

const (
	// Append is the pwrite of the log append (logstore's appendLocked
	// writing the segment file; its index writes are not counted).
	Append Kind = iota
	// Fsync is an fsync of the log (os.(*File).Sync under logstore).
	Fsync
	// SockWrite is a socket write (net.(*netFD).Write), other than
	// the profiling endpoint's own.
	SockWrite
	// SockRead is a socket read (net.(*netFD).Read), other than the
	// profiling endpoint's own.
	SockRead
	numKinds
)

var kindNames = [numKinds]string{"pwrite", "fsync", "sock-write", "sock-read"}

func (k Kind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Span is one syscall, from its start to its end, in nanoseconds of
// CLOCK_MONOTONIC.
type Span struct {
	Start, End int64
}

// Dur is the span's length in nanoseconds.
func (s Span) Dur() int64 { return s.End - s.Start }

// Node is the syscalls of one process, per kind, sorted by start.
type Node struct {
	Spans [numKinds][]Span
}

const logstorePkg = "/internal/logstore."

// Classify returns the kind of a syscall whose stack is frames (function
// names, the innermost first), or false for a syscall of no interest.
func Classify(frames []string) (Kind, bool) {
	var sync, write, read bool
	for _, f := range frames {
		switch {
		case strings.HasPrefix(f, "net/http."):
			// The profiling endpoint serving the trace itself.
			return 0, false
		case strings.Contains(f, logstorePkg):
			// The innermost logstore frame says what the log did: the
			// segment write of an append is called by appendLocked
			// itself, an index write by writeIndexEntries.
			if sync {
				return Fsync, true
			}
			if strings.HasSuffix(f, ".(*Log).appendLocked") {
				return Append, true
			}
			return 0, false
		case f == "os.(*File).Sync":
			sync = true
		case f == "net.(*netFD).Write":
			write = true
		case f == "net.(*netFD).Read":
			read = true
		}
	}
	switch {
	case write:
		return SockWrite, true
	case read:
		return SockRead, true
	}
	return 0, false
}

// ErrNoClock is returned for a trace without a clock snapshot (written
// by a Go older than 1.25), which cannot be put on the shared time axis.
var ErrNoClock = errors.New("hops: the trace has no clock snapshot (Go 1.25 or later writes them)")

// Read parses one execution trace and returns its process's syscalls of
// interest on the CLOCK_MONOTONIC axis.
func Read(r io.Reader) (*Node, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("hops: %w", err)
	}
	type open struct {
		start int64 // on the CLOCK_MONOTONIC axis
		kind  Kind
		ok    bool
	}
	n := &Node{}
	var (
		offset   int64 // CLOCK_MONOTONIC minus the trace clock
		clock    bool
		inFlight = map[trace.GoID]open{}
		frames   []string
	)
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("hops: %w", err)
		}
		switch ev.Kind() {
		case trace.EventSync:
			// Every generation starts with one: taking each keeps the
			// drift between the two clocks within a generation.
			if s := ev.Sync(); s.ClockSnapshot != nil {
				offset = int64(s.ClockSnapshot.Mono) - int64(s.ClockSnapshot.Trace)
				clock = true
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			switch {
			case to == trace.GoSyscall && from != trace.GoSyscall:
				frames = frames[:0]
				for f := range st.Stack.Frames() {
					frames = append(frames, f.Func)
				}
				if !clock {
					return nil, ErrNoClock
				}
				k, ok := Classify(frames)
				inFlight[g] = open{start: int64(ev.Time()) + offset, kind: k, ok: ok}
			case from == trace.GoSyscall && to != trace.GoSyscall:
				o, found := inFlight[g]
				delete(inFlight, g)
				if !found || !o.ok {
					continue
				}
				n.Spans[o.kind] = append(n.Spans[o.kind], Span{Start: o.start, End: int64(ev.Time()) + offset})
			}
		}
	}
	if !clock {
		return nil, ErrNoClock
	}
	for k := range n.Spans {
		slices.SortFunc(n.Spans[k], func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	}
	return n, nil
}
