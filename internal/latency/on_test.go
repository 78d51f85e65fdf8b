//go:build krabkalatency

package latency

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestPrintsEachSeriesOnceAndStartsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		r := &recorder{out: &buf, series: map[string]*series{}}
		for i := 1; i <= 100; i++ {
			r.add("b span", int64(time.Duration(i)*time.Millisecond), true)
			r.add("a count", int64(i), false)
		}
		if buf.Len() != 0 {
			t.Fatalf("printed before the interval was over: %q", buf.String())
		}
		time.Sleep(interval)
		r.add("c later", 1, false) // prints the first interval's series, keeps this one
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("printed %d lines, want 2:\n%s", len(lines), buf.String())
		}
		for i, want := range []string{
			`latency "a count" `,
			`latency "b span" `,
		} {
			if !strings.HasPrefix(lines[i], want) {
				t.Fatalf("line %d = %q, want it to start with %q", i, lines[i], want)
			}
		}
		for _, want := range []string{"n=100 mean=50 p50=51 p90=91 p99=100 p99.9=100 max=100", "n=100 mean=50.5ms p50=51ms p90=91ms p99=100ms"} {
			if !strings.Contains(buf.String(), want) {
				t.Fatalf("missing %q in:\n%s", want, buf.String())
			}
		}
		buf.Reset()
		time.Sleep(interval)
		r.add("d last", 1, false)
		if got := buf.String(); !strings.HasPrefix(got, `latency "c later" `) || strings.Count(got, "\n") != 1 {
			t.Fatalf("the second interval printed %q, want the one value recorded in it", got)
		}
	})
}

func TestUnstampedPointsRecordNothing(t *testing.T) {
	Between("unstamped", Stamp{}, Now())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if _, ok := rec.series["unstamped"]; ok {
		t.Fatal("a span from a zero stamp was recorded")
	}
}
