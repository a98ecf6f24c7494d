package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"regexp"
	"strconv"
)

// What browserTable measured, for the goals (zero: not measured).
var browserRes struct {
	p2p1, cpuP2P1, p2p1Min, p2p1Max float64
	p1Ms, p2Ms, p1CPU, p2CPU        float64
	newSessionMs                    float64
	traceRatio, traceMin, traceMax  float64
	traceCPU                        float64
}

// browserTable runs the browser benchmarks of issue 32 in the repository,
// in real Chromium: BenchmarkBrowserSuite of internal/engine (the 20-case
// sign-in and order suite, one and two cases at a time back to back),
// BenchmarkSession of internal/browser (a warm pool's new context) and
// BenchmarkTraceCost of internal/engine (a passing suite with the trace
// modes back to back). Skipped without Chromium.
func browserTable() {
	fmt.Printf("\n## Browser cases (real Chromium; ratios from the same iterations, run back to back)\n\n")
	if _, err := exec.LookPath("chromium"); err != nil && os.Getenv("DUET_CHROME_PATH") == "" {
		fmt.Println("skipped: no Chromium (apt-get install -y chromium, or set DUET_CHROME_PATH)")
		return
	}
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
	sess := run("./internal/browser/", "BenchmarkSession", "20x")
	r.newSessionMs = metric(sess, "new-session-ms")
	tr := run("./internal/engine/", "BenchmarkTraceCost", *browserN)
	r.traceRatio, r.traceMin, r.traceMax = metric(tr, "on-failure/off"), metric(tr, "on-failure/off-min"), metric(tr, "on-failure/off-max")
	r.traceCPU = metric(tr, "cpu-on-failure/off")

	fmt.Println("| measure | value |")
	fmt.Println("|---|---:|")
	fmt.Printf("| 20-case suite, one case at a time | %.1fs |\n| the same, two at a time | %.1fs |\n", r.p1Ms/1e3, r.p2Ms/1e3)
	fmt.Printf("| two ÷ one at a time, wall | %.2fx (iterations %.2f–%.2f) |\n", r.p2p1, r.p2p1Min, r.p2p1Max)
	fmt.Printf("| CPU per case (Go and Chromium), one / two at a time | %.0f ms / %.0f ms (%.2fx) |\n", r.p1CPU, r.p2CPU, r.cpuP2P1)
	fmt.Printf("| share of the steps' time: open / fill / waitFor / assert* | %.0f%% / %.0f%% / %.0f%% / %.0f%% |\n",
		metric(suite, "open-%"), metric(suite, "fill-%"), metric(suite, "waitFor-%"), metric(suite, "assert-%"))
	fmt.Printf("| new browser context on a warm pool (NewSession) | %.0fms |\n", r.newSessionMs)
	fmt.Printf("| passing suite, trace on-failure ÷ off, wall | %.2fx (iterations %.2f–%.2f) |\n", r.traceRatio, r.traceMin, r.traceMax)
	fmt.Printf("| the same, CPU | %.2fx |\n", r.traceCPU)
}
