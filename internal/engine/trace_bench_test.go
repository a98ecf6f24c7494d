package engine_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/trace"
)

// BenchmarkTraceCost is the cost of tracing: one run of a 20-case passing
// suite (open the sample shop's orders page, wait for its API, assert the
// list's state and title) in real Chromium, 4 cases at a time on a warm
// pool, with the trace mode off, on-failure (the default) and on. ns/op is
// the wall time of a run, ms/case per case; stored-KB/case is what the
// artifact store keeps per case (traces only: the cases pass). Compare the
// modes within one run of the benchmark, as ratios:
//
//	go test -run '^$' -bench BenchmarkTraceCost -benchtime 5x ./internal/engine/
func BenchmarkTraceCost(b *testing.B) {
	requireBrowser(b)
	shopURL, stop, err := sample.StartShop(context.Background(), "127.0.0.1:0", sample.NewOrders())
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const cases = 20
	var suite strings.Builder
	fmt.Fprintf(&suite, "task: {name: traced, baseURL: %s}\ncases:\n", shopURL)
	for i := range cases {
		fmt.Fprintf(&suite, `  - key: orders-%d
    title: The orders load (%d)
    steps:
      - open: /evidence/orders
      - assertText: {selector: "#load-state", equals: loaded}
      - assertText: {selector: "#orders-label", equals: Recent orders}
`, i, i)
	}
	task := applyB(b, db, suite.String())
	pool := browser.NewPool(browser.Options{})
	defer pool.Close()
	for _, mode := range []trace.Mode{trace.Off, trace.OnFailure, trace.On} {
		b.Run("trace="+string(mode), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "artifacts")
			e := engine.New(db, engine.Options{
				Browser: app.NewBrowser(pool), Parallel: 4, Trace: mode,
				Artifacts: artifact.New(dir, 0),
			})
			w := engine.NewWorker(db, e, engine.WorkerOptions{})
			runOnce := func() {
				run := createRun(b, db, task)
				if ok, err := w.ExecuteRun(b.Context(), run.ID); !ok || err != nil {
					b.Fatalf("ExecuteRun: %v, %v", ok, err)
				}
				final, err := db.FindRunByID(b.Context(), "", run.ID)
				if err != nil || final.Status != duet.StatusPassed {
					b.Fatalf("run: got %v, %v; want passed", final.Status, err)
				}
			}
			runOnce() // a warm pool, as in a server
			before := dirSize(b, dir)
			for b.Loop() {
				runOnce()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*cases), "ms/case")
			b.ReportMetric(float64(dirSize(b, dir)-before)/1024/float64(b.N*cases), "stored-KB/case")
		})
	}
}

// dirSize is the size of the files under dir (0 when there is none).
func dirSize(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
