package engine_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// BenchmarkAutoWait is issue 27's before and after: the 20-case sign-in
// suite of BenchmarkBrowserSuite as it was first written (CSS selectors
// only, so that it compiles on a tree from before locators), one case at a
// time and four at a time, on a warm pool with the network guard on. The
// same file runs on the tree before locators and actionability (0150424)
// and on this one, where awOptions turns the trace off (the tree before
// had none); bench/autowait.sh builds both and alternates them.
//
// p1 and p4 are one and four cases at a time: the wall time of a run and
// the CPU of the process tree (Go and Chromium) per case.
func BenchmarkAutoWait(b *testing.B) {
	requireBrowser(b)
	shop := sampletest.Shop(b)
	db := openStore(b)
	var suite strings.Builder
	fmt.Fprintf(&suite, "task: {name: aw-bench, baseURL: %s}\ncases:\n", shop)
	for i := range 20 {
		fmt.Fprintf(&suite, `  - key: case-%d
    title: A shopper signs in and sees an order (%d)
    steps:
      - open: /login
      - fill: {selector: "#username", value: shopper%d}
      - fill: {selector: "#password", value: not-a-real-password}
      - select: {selector: "#language", value: en}
      - click: "#remember"
      - click: "#login-submit"
      - waitFor: {urlContains: "welcome="}
      - assertVisible: "#welcome"
      - assertText: {selector: "#welcome", contains: shopper%d}
      - open: /order?orderId=A1001
      - assertText: {selector: "#status", equals: paid}
      - click: "#refresh"
      - assertText: {selector: "#status", equals: paid}
`, i, i, i, i)
	}
	task := applyB(b, db, suite.String())
	pool := browser.NewPool(browser.Options{Guard: &netguard.Policy{}})
	defer pool.Close()
	workers := map[int]*engine.Worker{}
	for _, n := range []int{1, 4} {
		o := engine.Options{Browser: app.NewBrowser(pool), Parallel: n}
		awOptions(&o)
		workers[n] = engine.NewWorker(db, engine.New(db, o), engine.WorkerOptions{})
	}
	runOnce := func(n int) (time.Duration, time.Duration) {
		run := createRun(b, db, task)
		start, cpu0 := time.Now(), treeCPU(os.Getpid())
		if ok, err := workers[n].ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		wall, cpu := time.Since(start), treeCPU(os.Getpid())-cpu0
		final, err := db.FindRunByID(b.Context(), "", run.ID)
		if err != nil || final.Status != duet.StatusPassed {
			b.Fatalf("run: got %v, %v; want passed", final.Status, err)
		}
		return wall, cpu
	}
	runOnce(4)
	runOnce(1)
	var w1, c1, w4, c4 time.Duration
	for b.Loop() {
		w, c := runOnce(1)
		w1, c1 = w1+w, c1+c
		w, c = runOnce(4)
		w4, c4 = w4+w, c4+c
	}
	n := float64(b.N)
	b.ReportMetric(float64(w1.Milliseconds())/n, "p1-ms/run")
	b.ReportMetric(float64(c1.Milliseconds())/n/20, "p1-cpu-ms/case")
	b.ReportMetric(float64(w4.Milliseconds())/n, "p4-ms/run")
	b.ReportMetric(float64(c4.Milliseconds())/n/20, "p4-cpu-ms/case")
}
