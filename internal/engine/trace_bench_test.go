package engine_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/trace"
)

// BenchmarkTraceCost is the cost of tracing: one run of a 20-case passing
// suite (open the sample shop's orders page, wait for its API, assert the
// list's state and title) in real Chromium, 4 cases at a time on a warm
// pool, with the trace mode off, on-failure (the default) and on. Each
// iteration runs the suite once in each mode, back to back, so that the
// ratios come from the same moments of a noisy machine (issue 32's goal:
// on-failure within 1.1× of off on a passing suite).
//
// off-ms/case, on-failure-ms/case and on-ms/case are the wall times per
// case; on-failure/off and on/off their ratios (with -min and -max over
// the iterations); cpu-on-failure/off and cpu-on/off the ratios of the CPU
// of the process tree (Go and Chromium); on-KB/case is what the artifact
// store keeps per case under on (on-failure and off keep nothing: the
// cases pass).
//
//	go test -run '^$' -bench BenchmarkTraceCost -benchtime 5x ./internal/engine/
func BenchmarkTraceCost(b *testing.B) {
	requireBrowser(b)
	shopURL := sampletest.Shop(b)
	db := openStore(b)
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
	modes := []trace.Mode{trace.Off, trace.OnFailure, trace.On}
	workers := map[trace.Mode]*engine.Worker{}
	dirs := map[trace.Mode]string{}
	for _, mode := range modes {
		dirs[mode] = filepath.Join(b.TempDir(), "artifacts")
		e := engine.New(db, engine.Options{
			Browser: app.NewBrowser(pool), Parallel: 4, Trace: mode,
			Artifacts: artifact.New(dirs[mode], 0),
		})
		workers[mode] = engine.NewWorker(db, e, engine.WorkerOptions{})
	}
	runOnce := func(mode trace.Mode) (wall, cpu time.Duration) {
		run := createRun(b, db, task)
		start, cpu0 := time.Now(), treeCPU(os.Getpid())
		if ok, err := workers[mode].ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		wall, cpu = time.Since(start), treeCPU(os.Getpid())-cpu0
		final, err := db.FindRunByID(b.Context(), "", run.ID)
		if err != nil || final.Status != duet.StatusPassed {
			b.Fatalf("run: got %v, %v; want passed", final.Status, err)
		}
		return wall, cpu
	}
	for _, mode := range modes {
		runOnce(mode) // a warm pool, as in a server
	}
	before := dirSize(b, dirs[trace.On])
	walls, cpus := map[trace.Mode]time.Duration{}, map[trace.Mode]time.Duration{}
	ratios := map[trace.Mode][]float64{}
	for i := 0; b.Loop(); i++ {
		// Each mode first in turn: what comes first in an iteration
		// (a machine that just got busier) is no mode's.
		got := map[trace.Mode]time.Duration{}
		for j := range modes {
			mode := modes[(i+j)%len(modes)]
			w, c := runOnce(mode)
			walls[mode] += w
			cpus[mode] += c
			got[mode] = w
		}
		for _, mode := range modes[1:] {
			ratios[mode] = append(ratios[mode], float64(got[mode])/float64(got[trace.Off]))
		}
	}
	n := float64(b.N * cases)
	for _, mode := range modes {
		b.ReportMetric(float64(walls[mode].Microseconds())/1e3/n, string(mode)+"-ms/case")
		if mode == trace.Off {
			continue
		}
		b.ReportMetric(float64(walls[mode])/float64(walls[trace.Off]), string(mode)+"/off")
		slices.Sort(ratios[mode])
		b.ReportMetric(ratios[mode][0], string(mode)+"/off-min")
		b.ReportMetric(ratios[mode][len(ratios[mode])-1], string(mode)+"/off-max")
		b.ReportMetric(float64(cpus[mode])/float64(cpus[trace.Off]), "cpu-"+string(mode)+"/off")
	}
	b.ReportMetric(float64(dirSize(b, dirs[trace.On])-before)/1024/n, "on-KB/case")
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
