package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/sqlite"
)

// BenchmarkBrowserSuite runs a 20-case browser suite that passes — each
// case signs in on the sample shop (open, fill, fill, select, check, click,
// waitFor the URL, assertVisible, assertText) and opens an order (open,
// assertText, click its refresh button, assertText) — as one run of 4
// executions at a time on a warm pool. It uses only CSS selectors, so the
// same benchmark runs on a tree from before locators: the cost of waiting
// for actionability (stable across two animation frames, not covered) on a
// suite that never needed to wait.
//
// ms/run is the wall time of one run; cpu-ms/run the CPU of the process
// tree (Go and Chromium) per run.
//
//	go test -run '^$' -bench BenchmarkBrowserSuite -benchtime 5x ./internal/engine/
func BenchmarkBrowserSuite(b *testing.B) {
	requireBrowser(b)
	shop, stop, err := sample.StartShop(context.Background(), "127.0.0.1:0", sample.NewOrders())
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var suite strings.Builder
	fmt.Fprintf(&suite, "task: {name: suite-bench, baseURL: %s}\ncases:\n", shop)
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
	pool := browser.NewPool(browser.Options{})
	defer pool.Close()
	e := engine.New(db, engine.Options{Browser: app.NewBrowser(pool), Parallel: 4})
	w := engine.NewWorker(db, e, engine.WorkerOptions{})
	runOnce := func() {
		run := createRun(b, db, task)
		if ok, err := w.ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		final, err := db.FindRunByID(b.Context(), "", run.ID)
		if err != nil || final.Status != duet.StatusPassed {
			execs, _ := db.FindExecutions(b.Context(), run.ID)
			for _, x := range execs {
				b.Log(describe(x))
			}
			b.Fatalf("run: got %v, %v; want passed", final.Status, err)
		}
	}
	runOnce() // warm: the browser is started
	start, cpu := time.Now(), treeCPU(os.Getpid())
	for b.Loop() {
		runOnce()
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/run")
	b.ReportMetric(float64((treeCPU(os.Getpid())-cpu).Milliseconds())/float64(b.N), "cpu-ms/run")
}
