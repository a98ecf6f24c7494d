package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sqlite"
)

// BenchmarkDemoCase runs the demo's web case (open the order page → extract
// orderId → mcpCall query_order with the page.url binding → assertText of
// the status) in real Chromium against the sample shop and the sample order
// MCP server on loopback, as one run of 1, 4 or 8 executions of the case that
// execute in parallel on a warm browser pool with the default settings
// (DUET_BROWSERS=2, 8 contexts per browser). ns/op is the wall time of one
// run; ms/case divides it by the executions.
//
// cpu-ms/case is the CPU time (user and system) that the process tree spent
// per case: the Go process and the Chromium processes, including renderers
// that exited (their parents have reaped them). With C cores, C*1000 divided
// by it bounds the cases a second the machine can run, whatever the
// parallelism.
//
// peak-rss-MB and peak-pss-MB are the peaks, sampled every 25 ms, of the
// memory of the whole process tree: the Go test process and every Chromium
// process under it. RSS counts pages shared between the Chromium processes
// once per process; PSS shares them out and is the better total.
//
// The start sub-benchmark is the cost of the browser start: a new pool
// starts Chromium and opens the first session (ms-to-session), and then
// stops it (ns/op includes the stop).
//
//	go test -run '^$' -bench BenchmarkDemoCase -benchtime 10x ./internal/engine/
func BenchmarkDemoCase(b *testing.B) {
	requireBrowser(b)
	svc := newOrderService(b)
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()

	b.Run("start", func(b *testing.B) {
		var mem memSampler
		mem.start()
		var toSession time.Duration
		for b.Loop() {
			start := time.Now()
			p := browser.NewPool(browser.Options{})
			s, err := app.NewBrowser(p).NewSession(b.Context(), "", netguard.Allowance{})
			if err != nil {
				b.Fatal(err)
			}
			toSession += time.Since(start)
			s.Close()
			p.Close()
		}
		b.ReportMetric(float64(toSession.Milliseconds())/float64(b.N), "ms-to-session")
		mem.report(b)
	})

	for _, n := range []int{1, 4, 8} {
		var suite strings.Builder
		fmt.Fprintf(&suite, "task: {name: demo-%d, baseURL: %s}\ncases:\n", n, svc.shopURL)
		for i := range n {
			fmt.Fprintf(&suite, `  - key: order-%d
    title: The order page agrees with the order service (%d)
    steps:
      - open: /order?orderId=A1001
      - extract: {from: url.query, param: orderId, as: orderId}
      - mcpCall:
          serverKey: %s
          tool: query_order
          input: {orderId: {source: page.url, path: orderId}}
          saveAs: order
      - assertText: {selector: "#status", equals: "${order.structuredContent.order.status}"}
`, i, i, ordersKey)
		}
		task := applyB(b, db, suite.String())

		b.Run(fmt.Sprintf("parallel=%d", n), func(b *testing.B) {
			pool := browser.NewPool(browser.Options{})
			defer pool.Close()
			e := engine.New(db, engine.Options{
				Browser: app.NewBrowser(pool), Invoker: svc, Parallel: n,
				Artifacts: artifact.New(filepath.Join(b.TempDir(), "artifacts"), 0),
			})
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
			runOnce() // start the browser: the pool is warm, as in a server
			var mem memSampler
			mem.start()
			start, cpu := time.Now(), treeCPU(os.Getpid())
			for b.Loop() {
				runOnce()
			}
			cases := float64(b.N * n)
			b.ReportMetric(float64(time.Since(start).Milliseconds())/cases, "ms/case")
			b.ReportMetric(float64((treeCPU(os.Getpid())-cpu).Milliseconds())/cases, "cpu-ms/case")
			mem.report(b)
		})
	}
}

func applyB(b *testing.B, db *sqlite.DB, yaml string) *duet.Task {
	b.Helper()
	s, err := compiler.CompileSuite(context.Background(), []byte(yaml), "bench.yaml", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := db.ApplySuite(context.Background(), "alice", s)
	if err != nil {
		b.Fatal(err)
	}
	return res.Task
}

func createRun(b *testing.B, db *sqlite.DB, task *duet.Task) *duet.Run {
	b.Helper()
	ctx := context.Background()
	cases, _, _, err := db.FindCases(ctx, duet.CaseFilter{TaskID: task.ID})
	if err != nil {
		b.Fatal(err)
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := db.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		b.Fatal(err)
	}
	return run
}

// memSampler records the peak memory of this process and its descendants.
type memSampler struct {
	stop     chan struct{}
	done     sync.WaitGroup
	rss, pss int64 // peaks, bytes
}

func (m *memSampler) start() {
	if runtime.GOOS != "linux" {
		return
	}
	m.stop = make(chan struct{})
	m.done.Go(func() {
		t := time.NewTicker(25 * time.Millisecond)
		defer t.Stop()
		for {
			rss, pss := treeMemory(os.Getpid())
			m.rss, m.pss = max(m.rss, rss), max(m.pss, pss)
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	})
}

// report stops the sampler and reports the peaks.
func (m *memSampler) report(b *testing.B) {
	if m.stop == nil {
		return
	}
	close(m.stop)
	m.done.Wait()
	b.ReportMetric(float64(m.rss)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(m.pss)/(1<<20), "peak-pss-MB")
}

// treeCPU returns the CPU time that pid and its descendants have used,
// including the children they have reaped.
func treeCPU(pid int) time.Duration {
	children := map[int][]int{}
	ticks := map[int]int64{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		// Fields after comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
		fields := strings.Fields(string(data[i+1:]))
		if len(fields) < 15 {
			continue
		}
		self, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], self)
		var sum int64
		for _, k := range fields[11:15] {
			v, _ := strconv.ParseInt(k, 10, 64)
			sum += v
		}
		ticks[self] = sum
	}
	var total int64
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p]...)
		total += ticks[p]
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(total) * time.Second / clockTicks
}

// treeMemory returns the summed RSS and PSS of pid and its descendants.
func treeMemory(pid int) (rss, pss int64) {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces and parens.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(data[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		self, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		children[ppid] = append(children[ppid], self)
	}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		queue = append(queue, children[p]...)
		r, s := procMemory(p)
		rss += r
		pss += s
	}
	return rss, pss
}

// procMemory reads Rss and Pss of one process from smaps_rollup.
func procMemory(pid int) (rss, pss int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "Rss:":
			rss = kb << 10
		case "Pss:":
			pss = kb << 10
		}
	}
	return rss, pss
}
