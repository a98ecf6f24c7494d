package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
)

// What browserTable measured, for the goals (zero: not measured).
var browserRes struct {
	p2p1, cpuP2P1, p2p1Min, p2p1Max float64
	p1Ms, p2Ms, p1CPU, p2CPU        float64
	spread, spreadMin, spreadMax    float64 // two at a time over two processes ÷ one at a time
	spreadMs, spreadCPU, cpuSpread  float64
	newSessionMs, openMs            float64
	traceRatio, traceMin, traceMax  float64
	traceCPU                        float64
}

// browserTable runs the browser benchmarks of issue 32 in the repository,
// in real Chromium: BenchmarkBrowserSuite of internal/engine (the 20-case
// sign-in and order suite, one at a time, two at a time in one Chromium
// process and two at a time spread over two, back to back),
// BenchmarkSession and BenchmarkSessionOpen of internal/browser (a warm
// pool's new context, and a context's opening with nothing opened ahead) and
// BenchmarkTraceCost of internal/engine (a passing suite with the trace
// modes back to back). Skipped without Chromium.
func browserTable() {
	fmt.Printf("\n## Browser cases (real Chromium; ratios from the same iterations, run back to back)\n\n")
	// The benchmarks' pools start the default executable (they read no
	// DUET_CHROME_PATH). Which one matters: the headless shell costs about
	// 0.6x the CPU per case of the full browser (docs/performance.md, part 12).
	exe, err := browser.Executable("")
	if err != nil {
		fmt.Printf("skipped: %s\n", duet.ErrorMessage(err))
		return
	}
	version, _ := exec.Command(exe, "--version").Output()
	fmt.Printf("Browser: `%s` (%s)\n\n", exe, strings.TrimSpace(string(version)))
	run := func(pkg, name, times string) []byte {
		cmd := exec.Command("go", "test", pkg, "-run", "^$", "-bench", "^"+name+"$", "-benchtime", times)
		cmd.Dir = *repo
		cmd.Env = append(os.Environ(), "DUET_REQUIRE_BROWSER=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			log.Fatalf("%s: %v\n%s", name, err, out)
		}
		line := regexp.MustCompile(name + `\S*\s+\d+\s+\d+ ns/op[^\n]*`).Find(out)
		if line == nil {
			log.Fatalf("%s: unexpected output\n%s", name, out)
		}
		return line
	}
	metric := func(line []byte, unit string) float64 {
		m := regexp.MustCompile(`([\d.]+) ` + regexp.QuoteMeta(unit) + `(\s|$)`).FindSubmatch(line)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	r := &browserRes
	suite := run("./internal/engine/", "BenchmarkBrowserSuite", *browserN)
	r.p1Ms, r.p2Ms, r.p2p1 = metric(suite, "p1-ms/run"), metric(suite, "p2-ms/run"), metric(suite, "p2/p1")
	r.p2p1Min, r.p2p1Max = metric(suite, "p2/p1-min"), metric(suite, "p2/p1-max")
	r.p1CPU, r.p2CPU, r.cpuP2P1 = metric(suite, "p1-cpu-ms/case"), metric(suite, "p2-cpu-ms/case"), metric(suite, "cpu-p2/p1")
	r.spreadMs, r.spread = metric(suite, "p2procs-ms/run"), metric(suite, "p2procs/p1")
	r.spreadMin, r.spreadMax = metric(suite, "p2procs/p1-min"), metric(suite, "p2procs/p1-max")
	r.spreadCPU, r.cpuSpread = metric(suite, "p2procs-cpu-ms/case"), metric(suite, "cpu-p2procs/p1")
	sess := run("./internal/browser/", "BenchmarkSession", "20x")
	r.newSessionMs = metric(sess, "new-session-ms")
	r.openMs = metric(run("./internal/browser/", "BenchmarkSessionOpen", "20x"), "open-ms")
	tr := run("./internal/engine/", "BenchmarkTraceCost", *browserN)
	r.traceRatio, r.traceMin, r.traceMax = metric(tr, "on-failure/off"), metric(tr, "on-failure/off-min"), metric(tr, "on-failure/off-max")
	r.traceCPU = metric(tr, "cpu-on-failure/off")

	fmt.Println("| measure | value |")
	fmt.Println("|---|---:|")
	fmt.Printf("| 20-case suite, one case at a time | %.1fs |\n| the same, two at a time over two Chromium processes (DUET_BROWSER_PROCESSES=2) | %.1fs |\n| the same, two at a time in one process (DUET_BROWSER_PROCESSES=1) | %.1fs |\n", r.p1Ms/1e3, r.spreadMs/1e3, r.p2Ms/1e3)
	fmt.Printf("| two at a time over two processes ÷ one at a time, wall | %.2fx (iterations %.2f–%.2f) |\n", r.spread, r.spreadMin, r.spreadMax)
	fmt.Printf("| two at a time in one process ÷ one at a time, wall | %.2fx (iterations %.2f–%.2f) |\n", r.p2p1, r.p2p1Min, r.p2p1Max)
	fmt.Printf("| CPU per case (Go and Chromium), one at a time / two over two processes / two in one | %.0f ms / %.0f ms (%.2fx) / %.0f ms (%.2fx) |\n", r.p1CPU, r.spreadCPU, r.cpuSpread, r.p2CPU, r.cpuP2P1)
	fmt.Printf("| share of the steps' time: open / fill / waitFor / assert* | %.0f%% / %.0f%% / %.0f%% / %.0f%% |\n",
		metric(suite, "open-%"), metric(suite, "fill-%"), metric(suite, "waitFor-%"), metric(suite, "assert-%"))
	fmt.Printf("| new browser context on a warm pool (NewSession) | %.0fms |\n", r.newSessionMs)
	fmt.Printf("| a context's opening with nothing opened ahead (phone emulation, guard) | %.0fms |\n", r.openMs)
	fmt.Printf("| passing suite, trace on-failure ÷ off, wall | %.2fx (iterations %.2f–%.2f) |\n", r.traceRatio, r.traceMin, r.traceMax)
	fmt.Printf("| the same, CPU | %.2fx |\n", r.traceCPU)
}
