package main

import (
	"fmt"
	"log"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// invokeTable runs BenchmarkInvokeOverhead of internal/mcpclient (invoke()
// against a direct go-sdk CallTool of the same tool on the same loopback
// server, alternated in one loop, warm sessions) and
// BenchmarkSync1000Tools, with the go command, in the repository.
func invokeTable() (ratio float64) {
	fmt.Printf("\n## invoke() vs a direct go-sdk call (warm session), and a catalog sync of 1,000 tools\n\n")
	var out []byte
	for _, b := range []struct{ name, times string }{{"InvokeOverhead", *invokeN}, {"Sync1000Tools", "10x"}} {
		cmd := exec.Command("go", "test", "./internal/mcpclient/", "-run", "^$", "-bench", b.name, "-benchtime", b.times)
		cmd.Dir = *repo
		o, err := cmd.CombinedOutput()
		if err != nil {
			log.Fatalf("%s: %v\n%s", b.name, err, o)
		}
		out = append(out, o...)
	}
	line := regexp.MustCompile(`BenchmarkInvokeOverhead\S*\s+\d+\s+\d+ ns/op[^\n]*`).Find(out)
	s := regexp.MustCompile(`BenchmarkSync1000Tools\S*\s+\d+\s+(\d+) ns/op`).FindSubmatch(out)
	// metric returns the value the benchmark reported in unit (0 when it
	// did not: the CPU figures are reported where the OS gives them).
	metric := func(unit string) float64 {
		m := regexp.MustCompile(`([\d.]+) ` + regexp.QuoteMeta(unit) + `(\s|$)`).FindSubmatch(line)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	d, i, ratio := metric("direct-ns/call"), metric("invoke-ns/call"), metric("invoke/direct")
	if line == nil || s == nil || d == 0 || i == 0 {
		log.Fatalf("invoke benchmark: unexpected output\n%s", out)
	}
	sync, _ := strconv.ParseFloat(string(s[1]), 64)
	fmt.Println("| measure | value |")
	fmt.Println("|---|---:|")
	fmt.Printf("| direct go-sdk CallTool, mean | %.0fµs |\n| invoke(), mean | %.0fµs |\n| invoke ÷ direct | %.2fx |\n",
		d/1e3, i/1e3, ratio)
	if dc, ic := metric("direct-cpu-ns/call"), metric("invoke-cpu-ns/call"); dc > 0 {
		fmt.Printf("| process CPU per direct call | %.0fµs |\n| process CPU per invoke() | %.0fµs |\n| invoke ÷ direct, CPU | %.2fx |\n",
			dc/1e3, ic/1e3, metric("invoke/direct-cpu"))
	}
	fmt.Printf("| catalog sync of 1,000 tools | %.0fms |\n", sync/1e6)
	return ratio
}

// goals prints the goals of issue 15 beside what this run measured (the
// sections that ran).
func goals(m matrix, cold time.Duration, invoke float64, growth map[string]float64) {
	fmt.Printf("\n## The goals against this run\n\n| goal | measured | met |\n|---|---:|:---:|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	for _, era := range []string{"http-2025", "http-2026"} {
		cells := m[era]
		d, mg, fl := cells["duet"][32], cells["mcpgo"][32], cells["floor"][32]
		if d.n == 0 || mg.n == 0 || fl.n == 0 {
			continue
		}
		r := d.rps() / mg.rps()
		fmt.Printf("| %s c=32: governed get_test_task ≥ 1.0× bare mcp-go | %.2fx | %s |\n", era, r, yes(r >= 1))
		p := float64(d.p99) / float64(fl.p99)
		fmt.Printf("| %s c=32: p99 ≤ 2× the floor's | %.2fx | %s |\n", era, p, yes(p <= 2))
		fmt.Printf("| %s c=32: server CPU ≤ 100µs per call | %s | %s |\n", era, round(d.perCall()), yes(d.perCall() <= 100*time.Microsecond))
	}
	for _, c := range []int{1, 32} {
		s, h := m["stdio"]["duet"][c], m["http-2025"]["duet"][c]
		if s.n == 0 || h.n == 0 {
			continue
		}
		r := float64(s.perCall()) / float64(h.perCall())
		fmt.Printf("| stdio c=%d: CPU per call ≤ 1.2× HTTP's | %.2fx (%s vs %s) | %s |\n", c, r, round(s.perCall()), round(h.perCall()), yes(r <= 1.2))
	}
	if invoke > 0 {
		fmt.Printf("| invoke() ≤ 1.10× a direct go-sdk call | %.2fx | %s |\n", invoke, yes(invoke <= 1.10))
	}
	if cold > 0 {
		host := ""
		if coldBaseline > 0 {
			host = fmt.Sprintf(" (a Go program of its size that exits as main begins: %s)", round(coldBaseline))
		}
		fmt.Printf("| `duet mcp` cold start ≤ 30 ms | %s%s | %s |\n", round(cold), host, yes(cold <= 30*time.Millisecond))
	}
	for _, e := range []string{"SQLite", "PostgreSQL"} {
		if r, ok := growth[e]; ok {
			fmt.Printf("| every list with %d tasks ≤ 2× near-empty (%s, worst list, read in turns) | %.2fx | %s |\n", *grow, e, r, yes(r <= 2))
		}
	}
	if tripsGetTask > 0 {
		fmt.Printf("| PostgreSQL: governed get_test_task ≤ 2 round trips (token, data; audit batched) | %d | %s |\n", tripsGetTask, yes(tripsGetTask <= 2))
		fmt.Printf("| PostgreSQL: start_test_run ≤ 4 round trips (token, then the run) | %d | %s |\n", tripsStart, yes(tripsStart > 0 && tripsStart <= 4))
		fmt.Printf("| PostgreSQL: every catalog tool within its budgets (round trips: reads 2, start_test_run 4; statements: a read's data 1; table above) | %s | %s |\n", yes(tripsOK), yes(tripsOK))
	}
	if r := browserRes; r.p2p1 > 0 {
		fmt.Printf("| browser suite (20 cases): two at a time ≤ 0.65× the wall time of one at a time (two Chromium processes: DUET_BROWSER_PROCESSES=2, the default from 4 cores) | %.2fx (%.2f–%.2f) | %s |\n", r.spread, r.spreadMin, r.spreadMax, yes(r.spread > 0 && r.spread <= 0.65))
		fmt.Printf("| the same in one Chromium process (DUET_BROWSER_PROCESSES=1: the spreading switched off) | %.2fx (%.2f–%.2f) | %s |\n", r.p2p1, r.p2p1Min, r.p2p1Max, yes(r.p2p1 <= 0.65))
		fmt.Printf("| browser suite: CPU per case does not grow with two at a time (two processes / one) | %.2fx / %.2fx | %s |\n", r.cpuSpread, r.cpuP2P1, yes(r.cpuSpread > 0 && r.cpuSpread <= 1.0))
		fmt.Printf("| a browser context opens in ≤ 60 ms warm | %.0fms | %s |\n", r.newSessionMs, yes(r.newSessionMs > 0 && r.newSessionMs <= 60))
		fmt.Printf("| passing suite with trace on-failure ≤ 1.1× off | %.2fx (%.2f–%.2f) | %s |\n", r.traceRatio, r.traceMin, r.traceMax, yes(r.traceRatio <= 1.1))
	}
	if len(scaled) == 5 {
		sq, pg1, pgAll, pgEach, pgOff := scaled[0], scaled[1], scaled[2], scaled[3], scaled[4]
		r := float64(pg1.cpu) / float64(sq.cpu)
		fmt.Printf("| PostgreSQL: Duet's CPU per governed read ≤ 1.3× SQLite's (c=%d) | %.2fx (%s vs %s) | %s |\n", *conc, r, round(pg1.cpu), round(sq.cpu), yes(r <= 1.3))
		fmt.Printf("| PostgreSQL: the backend's CPU per governed read ≤ 150µs | %s (reads not coalesced: %s) | %s |\n", round(pg1.dbCPU), round(pgOff.dbCPU), yes(pg1.dbCPU <= 150*time.Microsecond))
		// Two instances on this machine share its cores with the database
		// and the load: their calls per second cannot add up here. What
		// scales is the work per call: the duet and backend CPU per call of
		// two instances, each driven as the one alone was (-c clients
		// each), against one's. With -c clients in all each instance has
		// half the concurrent reads to coalesce: shown beside it.
		w1, w2, wAll := pg1.cpu+pg1.dbCPU, pgEach.cpu+pgEach.dbCPU, pgAll.cpu+pgAll.dbCPU
		fmt.Printf("| PostgreSQL, 2 instances (%d clients each): CPU per call (duet + backend) ≤ 1/0.9 of one instance's | %.2fx (%s vs %s; req/s %.2fx; %d clients in all: %.2fx) | %s |\n",
			*conc, float64(w2)/float64(w1), round(w2), round(w1), pgEach.rps/pg1.rps, *conc, float64(wAll)/float64(w1), yes(float64(w2) <= float64(w1)/0.9))
	}
}
