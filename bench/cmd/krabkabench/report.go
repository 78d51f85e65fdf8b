package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// report is the run's result table.
type report struct {
	revision string
	started  time.Time
	duration time.Duration
	quick    bool
	command  string
	cpus     int
	load     string
	detectMS int
	systems  []string
	limits   machineLimits
	sizes    []sizeResult
	opts     options
}

// peers are the systems other than Krabka's two.
func (r *report) peers() []string {
	var out []string
	for _, s := range r.systems {
		if s != krabkaName && s != krabkaMetricsName && s != krabkaTLSName {
			out = append(out, s)
		}
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// row is one metric: a value per system, and whether higher is better.
type row struct {
	label  string
	vals   map[string]float64
	format func(float64) string
	higher bool
	target string // the target's text, "" for none
	// factor is the target ratio krabka/best peer (≥ factor when higher,
	// ≤ factor otherwise); 0 for no ratio target.
	factor float64
}

func (r *report) markdown() string {
	var b strings.Builder
	mode := "full"
	if r.quick {
		mode = "quick"
	}
	against := "Krabka vs " + strings.Join(r.peers(), " and ")
	if len(r.peers()) == 0 {
		against = "Krabka (" + strings.Join(r.systems, ", ") + ")"
	}
	fmt.Fprintf(&b, "%s, %s run of %s (%s), revision %s, %.0f s.\n\n",
		against, mode, r.started.Format("2006-01-02 15:04 UTC"),
		r.command, r.revision, r.duration.Seconds())
	fmt.Fprintf(&b, "Machine: %d CPUs, load average %s during the run. Floors measured in the same run: "+
		"256 B write + fdatasync p50 %s (p99 %s); loopback TCP round trip of 256 B p50 %s (p99 %s); "+
		"one fsync + one round trip = %s.\n\n",
		r.cpus, r.load, ms(r.limits.fsyncP50), ms(r.limits.fsyncP99), ms(r.limits.rttP50), ms(r.limits.rttP99),
		ms(r.limits.fsyncP50+r.limits.rttP50))
	fmt.Fprintf(&b, "Closed loops: %v per run, median of %d run(s) by throughput, %d connections at most; "+
		"failure detection %d ms in every system; failover: median of %d rounds.\n\n",
		r.opts.duration, r.opts.loopRounds, r.opts.conns, r.detectMS, r.opts.failRounds)
	for _, sz := range r.sizes {
		r.sizeTable(&b, sz)
	}
	return b.String()
}

func (r *report) sizeTable(b *strings.Builder, sz sizeResult) {
	fmt.Fprintf(b, "### %d nodes\n\n", sz.n)
	fmt.Fprintf(b, "| metric | %s | krabka / best peer | target | met |\n", strings.Join(r.systems, " | "))
	fmt.Fprintf(b, "| --- |%s ---: | --- | --- |\n", strings.Repeat(" ---: |", len(r.systems)))
	num := func(f float64) string { return fmt.Sprintf("%.0f", f) }
	msf := func(f float64) string { return fmt.Sprintf("%.1f ms", f) }
	var rows []row
	for ci, c := range r.opts.clients {
		get := func(f func(loopResult) float64) map[string]float64 {
			m := map[string]float64{}
			for name, ls := range sz.loops {
				if ci < len(ls) {
					m[name] = f(ls[ci])
				}
			}
			return m
		}
		msOf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		cl := fmt.Sprintf("%d clients", c)
		if c == 1 {
			cl = "1 client"
		}
		tput := row{label: cl + ": writes/s", vals: get(func(l loopResult) float64 { return l.opsPerSec() }), format: num, higher: true}
		p50 := row{label: cl + ": p50", vals: get(func(l loopResult) float64 { return msOf(l.p50) }), format: msf}
		p99 := row{label: cl + ": p99", vals: get(func(l loopResult) float64 { return msOf(l.p99) }), format: msf}
		p999 := row{label: cl + ": p99.9", vals: get(func(l loopResult) float64 { return msOf(l.p999) }), format: msf}
		cpu := row{label: cl + ": server CPU µs/write", vals: get(func(l loopResult) float64 { return l.cpuPerOpUS }), format: num}
		if sz.n == 3 && c == slices.Max(r.opts.clients) {
			tput.target, tput.factor = "≥ 2× best peer", 2
			p99.target, p99.factor = "≤ 0.5× best peer", 0.5
			cpu.target, cpu.factor = "≤ 0.5× best peer", 0.5
		}
		if sz.n == 3 && c == 1 {
			p50.target, p50.factor = "≤ 0.5× best peer", 0.5
		}
		rows = append(rows, tput, p50, p99, p999, cpu)
	}
	rows = append(rows, row{label: "peak RSS, sum over nodes (MB)", vals: sz.rssMB, format: num})
	if sz.failover {
		toMS := func(m map[string][]time.Duration) map[string]float64 {
			out := map[string]float64{}
			for k, v := range m {
				out[k] = float64(median(v).Microseconds()) / 1000
			}
			return out
		}
		kill := row{label: "kill -9 leader: write again after (median)", vals: toMS(sz.kill), format: msf}
		term := row{label: "SIGTERM leader: write again after (median)", vals: toMS(sz.term), format: msf}
		if sz.n == 3 {
			kill.target, kill.factor = "≤ 0.5× best peer", 0.5
			term.target = "≤ 100 ms"
		}
		rs := map[string]float64{}
		for k, v := range sz.restart {
			rs[k] = float64(v.Microseconds()) / 1000
		}
		rows = append(rows, kill, term,
			row{label: fmt.Sprintf("restart all nodes after %d writes: first write after", sz.fillN), vals: rs, format: msf},
			row{label: "data on disk before that restart (MB)", vals: sz.dataMB, format: func(f float64) string { return fmt.Sprintf("%.1f", f) }})
	}
	for _, rw := range rows {
		r.writeRow(b, sz, rw)
	}
	b.WriteString("\n")
	r.variantTable(b, sz, krabkaMetricsName, fmt.Sprintf("Metrics on (--admin-address, /metrics scraped every %v)", r.opts.scrapeEvery), metricsCostTarget)
	r.variantTable(b, sz, krabkaTLSName, "SASL_SSL with SCRAM-SHA-512 (clients and controllers)", 0)
}

// metricsCostTarget is the least throughput Krabka keeps with its metrics
// on and scraped, as a share of the same run's throughput with them off,
// at the most clients.
const metricsCostTarget = 0.97

// variantTable compares the Krabka system name (krabka-metrics,
// krabka-tls) with krabka, closed loop by closed loop, when the run had
// both; what describes what name turns on. A positive target is the least
// on / off throughput ratio at the most clients.
func (r *report) variantTable(b *strings.Builder, sz sizeResult, name, what string, target float64) {
	off, on := sz.loops[krabkaName], sz.loops[name]
	if off == nil || on == nil {
		return
	}
	fmt.Fprintf(b, "%s against krabka, %d nodes:\n\n", what, sz.n)
	b.WriteString("| clients | writes/s off | writes/s on | on / off | p99 off | p99 on | CPU µs/write off | CPU µs/write on | target | met |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
	most := slices.Max(r.opts.clients)
	for ci, c := range r.opts.clients {
		if ci >= len(off) || ci >= len(on) {
			break
		}
		f, n := off[ci], on[ci]
		ratio := 0.0
		if f.opsPerSec() > 0 {
			ratio = n.opsPerSec() / f.opsPerSec()
		}
		goal, met := "", ""
		if c == most && target > 0 {
			goal = fmt.Sprintf("on ≥ %.2f × off", target)
			met = yesNo(ratio >= target)
		}
		fmt.Fprintf(b, "| %d | %.0f | %.0f | %.3f | %s | %s | %.0f | %.0f | %s | %s |\n",
			c, f.opsPerSec(), n.opsPerSec(), ratio, ms(f.p99), ms(n.p99), f.cpuPerOpUS, n.cpuPerOpUS, goal, met)
	}
	b.WriteString("\n")
}

func (r *report) writeRow(b *strings.Builder, sz sizeResult, rw row) {
	cells := []string{rw.label}
	for _, s := range r.systems {
		if v, ok := rw.vals[s]; ok {
			cells = append(cells, rw.format(v))
		} else {
			cells = append(cells, "")
		}
	}
	ratio, best := "", 0.0
	k, hasK := rw.vals[krabkaName]
	for i, p := range r.peers() {
		v, ok := rw.vals[p]
		if !ok {
			continue
		}
		if i == 0 || (rw.higher && v > best) || (!rw.higher && v < best) {
			best = v
		}
	}
	if hasK && best > 0 {
		ratio = fmt.Sprintf("%.2f", k/best)
	}
	met := ""
	switch {
	case rw.factor > 0 && ratio != "":
		met = yesNo((rw.higher && k >= rw.factor*best) || (!rw.higher && k <= rw.factor*best))
	case rw.target == "≤ 100 ms" && hasK:
		met = yesNo(k <= 100)
	}
	if rw.target == "" || !hasK {
		met = ""
	}
	if strings.HasPrefix(rw.label, "1 client: p50") && sz.n == 3 && hasK && ratio != "" {
		floor := float64((r.limits.fsyncP50 + r.limits.rttP50).Microseconds()) / 1000
		rw.target += fmt.Sprintf(" and ≤ 2× floor (%.1f ms)", 2*floor)
		met = yesNo(met == "yes" && k <= 2*floor)
	}
	cells = append(cells, ratio, rw.target, met)
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
