package engine_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/trace"
)

// BenchmarkBrowserSuite runs a 20-case browser suite that passes — each
// case signs in on the sample shop (open, fill, fill, select, check, click,
// waitFor the URL, assertVisible, assertText) and opens an order (open,
// assertText, click its refresh button, assertText) — on a warm pool with
// the network guard on, as a server runs it. Each iteration runs the suite
// once with one case at a time and once with two (issue 32's goal: two at
// a time in at most 0.65× the wall time of one at a time, the CPU per case
// not growing), back to back, so that the ratios come from the same
// moments of a noisy machine. It uses only CSS selectors, so the same
// benchmark runs on a tree from before locators.
//
// p1-ms/run and p2-ms/run are the wall times of one run with one and two
// cases at a time, p2/p1 their ratio; p1-cpu-ms/case and p2-cpu-ms/case the
// CPU of the process tree (Go and Chromium) per case, cpu-p2/p1 their
// ratio. The p2procs metrics are those of two at a time again, on a pool
// that spreads the sessions over two Chromium processes
// (browser.Options.Processes), against the same serial runs.
// open-%, fill-%, waitFor-% and assert-% share out the time of the
// steps of the serial runs by kind (what a case spends where).
//
//	go test -run '^$' -bench BenchmarkBrowserSuite -benchtime 3x ./internal/engine/
func BenchmarkBrowserSuite(b *testing.B) {
	requireBrowser(b)
	shop := sampletest.Shop(b)
	db := openStore(b)
	const cases = suiteCases
	task := applyB(b, db, benchSuite(shop))
	// The guard of a server: loopback is refused but for the task's base
	// URL, which the engine allows per session.
	pool := browser.NewPool(browser.Options{Guard: &netguard.Policy{}})
	defer pool.Close()
	workers := map[int]*engine.Worker{}
	for _, n := range []int{1, 2} {
		e := engine.New(db, engine.Options{Browser: app.NewBrowser(pool), Parallel: n})
		workers[n] = engine.NewWorker(db, e, engine.WorkerOptions{})
	}
	// Two at a time again, spread over two Chromium processes
	// (browser.Options.Processes), on a pool of its own: p2procs.
	pool2 := browser.NewPool(browser.Options{Guard: &netguard.Policy{}, Processes: 2})
	defer pool2.Close()
	workers[3] = engine.NewWorker(db, engine.New(db, engine.Options{Browser: app.NewBrowser(pool2), Parallel: 2}), engine.WorkerOptions{})
	stepMs := map[string]int64{}
	runOnce := func(n int, tally bool) (wall, cpu time.Duration) {
		run := createRun(b, db, task)
		start, cpu0 := time.Now(), treeCPU(os.Getpid())
		if ok, err := workers[n].ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		wall, cpu = time.Since(start), treeCPU(os.Getpid())-cpu0
		final, err := db.FindRunByID(b.Context(), "", run.ID)
		execs, _ := db.FindExecutions(b.Context(), run.ID)
		if err != nil || final.Status != duet.StatusPassed {
			for _, x := range execs {
				b.Log(describe(x))
			}
			b.Fatalf("run: got %v, %v; want passed", final.Status, err)
		}
		if tally {
			for _, x := range execs {
				for _, r := range x.Results {
					stepMs[string(r.Kind)] += r.DurationMs
				}
			}
		}
		return wall, cpu
	}
	runOnce(2, false) // warm: the browsers are started
	runOnce(3, false)
	var walls, cpus [4]time.Duration
	var ratios, ratios3 []float64
	for i := 0; b.Loop(); i++ {
		var w, c [4]time.Duration
		order := [][]int{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}[i%3] // each first in turn
		for _, k := range order {
			w[k], c[k] = runOnce(k, k == 1)
		}
		for k := 1; k <= 3; k++ {
			walls[k] += w[k]
			cpus[k] += c[k]
		}
		ratios = append(ratios, float64(w[2])/float64(w[1]))
		ratios3 = append(ratios3, float64(w[3])/float64(w[1]))
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	b.ReportMetric(ms(walls[1])/n, "p1-ms/run")
	b.ReportMetric(ms(walls[2])/n, "p2-ms/run")
	b.ReportMetric(float64(walls[2])/float64(walls[1]), "p2/p1")
	slices.Sort(ratios)
	b.ReportMetric(ratios[0], "p2/p1-min")
	b.ReportMetric(ratios[len(ratios)-1], "p2/p1-max")
	b.ReportMetric(ms(cpus[1])/n/cases, "p1-cpu-ms/case")
	b.ReportMetric(ms(cpus[2])/n/cases, "p2-cpu-ms/case")
	b.ReportMetric(float64(cpus[2])/float64(cpus[1]), "cpu-p2/p1")
	slices.Sort(ratios3)
	b.ReportMetric(ms(walls[3])/n, "p2procs-ms/run")
	b.ReportMetric(float64(walls[3])/float64(walls[1]), "p2procs/p1")
	b.ReportMetric(ratios3[0], "p2procs/p1-min")
	b.ReportMetric(ratios3[len(ratios3)-1], "p2procs/p1-max")
	b.ReportMetric(ms(cpus[3])/n/cases, "p2procs-cpu-ms/case")
	b.ReportMetric(float64(cpus[3])/float64(cpus[1]), "cpu-p2procs/p1")
	var total int64
	for _, v := range stepMs {
		total += v
	}
	for _, k := range []string{"open", "fill", "waitFor", "assert"} {
		var v int64
		for kind, d := range stepMs {
			if kind == k || (k == "assert" && strings.HasPrefix(kind, "assert")) {
				v += d
			}
		}
		b.ReportMetric(100*float64(v)/float64(max(total, 1)), k+"-%")
	}
	b.ReportMetric(float64(total)/n/cases, "step-ms/case")
}

// suiteCases is the number of cases of benchSuite.
const suiteCases = 20

// benchSuite is the task of BenchmarkBrowserSuite and
// BenchmarkBrowserCaseCPU on the sample shop at shop: suiteCases cases
// that sign in and open an order.
func benchSuite(shop string) string { return shopSuite(shop, "suite-bench", suiteCases) }

// shopSuite is a task named name of n cases of benchSuite.
func shopSuite(shop, name string, n int) string {
	var suite strings.Builder
	fmt.Fprintf(&suite, "task: {name: %s, baseURL: %s}\ncases:\n", name, shop)
	for i := range n {
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
	return suite.String()
}

// BenchmarkBrowserCaseCPU runs the suite of BenchmarkBrowserSuite one case
// at a time on pools that differ only by their Chromium switches, each in
// turn in every iteration, and shares out the CPU per case by process: the
// Go process (engine, store and the sample shop), Chromium's browser
// process, its renderers (those that exited during the run included), the
// GPU process, the network service and the other utilities. It is the
// benchmark of the switches in internal/browser/options.go: a change of
// the switches is worth keeping when it lowers the CPU per case of its pool
// against the baseline's, measured in the same iterations.
//
// DUET_BENCH_CHROME_FLAGS lists the variants besides the baseline (v0,
// the pool's defaults), separated by "|"; a variant is switches separated
// by ";": name (added), !name (a default removed) or name=value; and
// exec=<executable>, the pool's ExecPath (exec=chromium measures the full
// browser against the headless shell the pool prefers), and trace=<mode>,
// trace-fps=N, trace-quality=N, trace-size=N (the frames' percent of the
// viewport) and trace-replay=<kept|always>, the trace its engine records
// (the default: on-failure, with the screencast, at trace.DefaultFPS), which
// are no switches. vN-cpu-ms/case
// is the CPU per case of variant N, vN/v0 its ratio to the baseline's,
// vN-<process>-ms/case the share of each kind of process, and
// vN-renderers/case the renderer processes started per case (seen by a
// sampler that reads /proc every 100 ms; its own CPU is in the go share).
//
// DUET_BENCH_CHROMIUM_TRACE=<file> records Chromium's own trace of the
// baseline's browser during the measured iterations
// (browser.Pool.TraceChromium; the categories of
// DUET_BENCH_CHROMIUM_TRACE_CATEGORIES, default toplevel,mojom,devtools)
// and writes it to file, for bench/cmd/chromeprof: the CPU of each thread
// by task, IPC interface and protocol command, per case.
//
//	DUET_BENCH_CHROME_FLAGS='renderer-process-limit=1' go test -run '^$' -bench BenchmarkBrowserCaseCPU -benchtime 3x ./internal/engine/
//	DUET_BENCH_CHROME_FLAGS='exec=chromium' go test -run '^$' -bench BenchmarkBrowserCaseCPU -benchtime 3x ./internal/engine/
func BenchmarkBrowserCaseCPU(b *testing.B) {
	requireBrowser(b)
	variants := []map[string]any{nil}
	record := map[int]*traceChoice{}
	execs := map[int]string{}
	if spec := os.Getenv("DUET_BENCH_CHROME_FLAGS"); spec != "" {
		for v := range strings.SplitSeq(spec, "|") {
			flags := map[string]any{}
			for f := range strings.SplitSeq(v, ";") {
				f = strings.TrimSpace(f)
				switch name, value, ok := strings.Cut(f, "="); {
				case f == "":
				case name == "exec": // not a switch: the executable
					execs[len(variants)] = value
				case strings.HasPrefix(f, "trace"): // not a switch: the engine's trace
					c := record[len(variants)]
					if c == nil {
						c = &traceChoice{}
						record[len(variants)] = c
					}
					n, _ := strconv.Atoi(value)
					switch name {
					case "trace":
						c.mode = trace.Mode(value)
					case "trace-fps":
						c.opts.FPS = n
					case "trace-quality":
						c.opts.Quality = n
					case "trace-size":
						c.opts.FramePercent = n
					case "trace-replay":
						c.replay = trace.Replay(value)
					default:
						b.Fatalf("DUET_BENCH_CHROME_FLAGS: unknown %q", f)
					}
				case ok:
					flags[name] = value
				case strings.HasPrefix(f, "!"):
					flags[f[1:]] = false
				default:
					flags[f] = true
				}
			}
			variants = append(variants, flags)
		}
	}
	shop := sampletest.Shop(b)
	db := openStore(b)
	task := applyB(b, db, benchSuite(shop))
	warm := applyB(b, db, shopSuite(shop, "suite-warm", 2))
	workers := make([]*engine.Worker, len(variants))
	var pool0 *browser.Pool
	for i, flags := range variants {
		pool := browser.NewPool(browser.Options{ExecPath: execs[i], Guard: &netguard.Policy{}, Flags: flags})
		defer pool.Close()
		if i == 0 {
			pool0 = pool
		}
		opts := engine.Options{Browser: app.NewBrowser(pool), Parallel: 1}
		if c := record[i]; c != nil {
			opts.Trace, opts.TraceRecord, opts.TraceReplay = c.mode, c.opts, c.replay
		}
		workers[i] = engine.NewWorker(db, engine.New(db, opts), engine.WorkerOptions{})
	}
	sampler := newProcSampler(os.Getpid())
	defer sampler.stop()
	cpu := make([]map[string]time.Duration, len(variants))
	renderers := make([]int, len(variants))
	runOnce := func(v int, tally bool) {
		t := task
		if !tally {
			t = warm
		}
		run := createRun(b, db, t)
		before := sampler.mark()
		if ok, err := workers[v].ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		shares, started := sampler.since(before)
		if final, err := db.FindRunByID(b.Context(), "", run.ID); err != nil || final.Status != duet.StatusPassed {
			b.Fatalf("run of variant %d: got %v, %v; want passed", v, final.Status, err)
		}
		if !tally {
			return
		}
		if cpu[v] == nil {
			cpu[v] = map[string]time.Duration{}
		}
		for k, d := range shares {
			cpu[v][k] += d
		}
		renderers[v] += started["renderer"]
	}
	for v := range variants {
		runOnce(v, false) // warm: the browser is started, two cases run
	}
	traceFile := os.Getenv("DUET_BENCH_CHROMIUM_TRACE")
	var stopTrace func(context.Context) ([]byte, error)
	if traceFile != "" {
		cats := cmp.Or(os.Getenv("DUET_BENCH_CHROMIUM_TRACE_CATEGORIES"), "toplevel,mojom,devtools")
		var err error
		if stopTrace, err = pool0.TraceChromium(b.Context(), strings.Split(cats, ",")); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		for j := range variants {
			runOnce((i+j)%len(variants), true)
		}
	}
	if stopTrace != nil {
		data, err := stopTrace(b.Context())
		if err == nil {
			err = os.WriteFile(traceFile, data, 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("Chromium's trace of v0's %d cases: %s (cd bench && go run ./cmd/chromeprof -cases %d %s)", b.N*suiteCases, traceFile, b.N*suiteCases, traceFile)
	}
	per := float64(b.N * suiteCases)
	total := func(m map[string]time.Duration) (t time.Duration) {
		for _, d := range m {
			t += d
		}
		return t
	}
	for v := range variants {
		p := fmt.Sprintf("v%d-", v)
		b.ReportMetric(float64(total(cpu[v]).Microseconds())/1e3/per, p+"cpu-ms/case")
		if v > 0 {
			b.ReportMetric(float64(total(cpu[v]))/float64(total(cpu[0])), fmt.Sprintf("v%d/v0", v))
		}
		for _, k := range slices.Sorted(maps.Keys(cpu[v])) {
			b.ReportMetric(float64(cpu[v][k].Microseconds())/1e3/per, p+k+"-ms/case")
		}
		b.ReportMetric(float64(renderers[v])/per, p+"renderers/case")
	}
}

// traceChoice is the trace of a variant of BenchmarkBrowserCaseCPU.
type traceChoice struct {
	mode   trace.Mode
	opts   trace.RecordOptions
	replay trace.Replay
}

// procSampler follows the process tree under a pid: the kind of each
// process (its Chromium --type, "browser" for a Chromium without one, "go"
// for the root) and its CPU, read from /proc every 100 ms so that the
// processes that start and exit between two marks are known by kind.
type procSampler struct {
	root int
	mu   sync.Mutex
	seen map[int]procInfo // every process of the tree seen, by pid
	// foreign are the processes seen outside the tree.
	foreign map[int]bool
	quit    chan struct{}
	done    chan struct{}
}

// procInfo is what the sampler knows of one process.
type procInfo struct {
	ppid   int
	kind   string
	own    time.Duration // utime+stime
	reaped time.Duration // cutime+cstime: its children that exited
	live   bool
}

func newProcSampler(root int) *procSampler {
	s := &procSampler{root: root, seen: map[int]procInfo{}, foreign: map[int]bool{}, quit: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *procSampler) stop() { close(s.quit); <-s.done }

// sample reads the tree once.
func (s *procSampler) sample() {
	// Only the processes of the tree and those never seen are read: a
	// process outside the tree stays outside it (its parent is fixed at
	// its birth), and reading every process's stat costs milliseconds.
	dir, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := map[int]bool{}
	all := map[int]procInfo{}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		listed[pid] = true
		if s.foreign[pid] {
			continue
		}
		data, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(data[i+1:]))
		if len(fields) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		var t [4]int64
		for k := range t {
			t[k], _ = strconv.ParseInt(fields[11+k], 10, 64)
		}
		const tick = time.Second / 100 // USER_HZ on Linux
		all[pid] = procInfo{ppid: ppid, own: time.Duration(t[0]+t[1]) * tick, reaped: time.Duration(t[2]+t[3]) * tick, live: true}
	}
	for pid := range s.foreign {
		if !listed[pid] {
			delete(s.foreign, pid) // its pid may be reused
		}
	}
	for pid, p := range s.seen {
		p.live = false
		s.seen[pid] = p
	}
	children := map[int][]int{}
	for pid, p := range all {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	inTree := map[int]bool{}
	queue := []int{s.root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, ok := all[pid]
		if !ok {
			continue
		}
		inTree[pid] = true
		if old, known := s.seen[pid]; known {
			p.kind = old.kind
		} else {
			p.kind = procKind(pid, s.root)
		}
		s.seen[pid] = p
		queue = append(queue, children[pid]...)
	}
	for pid := range all {
		if !inTree[pid] {
			s.foreign[pid] = true
		}
	}
}

// procKind names the kind of process pid.
func procKind(pid, root int) string {
	if pid == root {
		return "go"
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	kind, sub := "browser", ""
	// Chromium rewrites the command line of its children with spaces.
	for a := range strings.FieldsFuncSeq(string(cmd), func(r rune) bool { return r == 0 || r == ' ' }) {
		if v, ok := strings.CutPrefix(a, "--type="); ok {
			kind = v
		}
		if v, ok := strings.CutPrefix(a, "--utility-sub-type="); ok {
			sub = v
		}
	}
	if kind == "utility" && sub != "" {
		kind = "utility:" + strings.TrimSuffix(sub[strings.LastIndexByte(sub, '.')+1:], "Service")
		if kind == "utility:" {
			kind = "utility"
		}
	}
	if kind == "gpu-process" {
		kind = "gpu"
	}
	return kind
}

// mark samples the tree and returns a copy of what is known.
func (s *procSampler) mark() map[int]procInfo {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.seen)
}

// since samples the tree and returns the CPU spent since mark by kind of
// process, and the processes started since by kind. A process that
// exited since counts with its parent's reaped time less what it had
// spent before the mark; the children that a parent reaped are of the
// kind the sampler saw them to be.
func (s *procSampler) since(mark map[int]procInfo) (cpu map[string]time.Duration, started map[string]int) {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	cpu, started = map[string]time.Duration{}, map[string]int{}
	reapedBy := map[int]time.Duration{} // parent pid → reaped CPU since the mark
	for pid, p := range s.seen {
		m, before := mark[pid]
		if !before {
			started[p.kind]++
		}
		if p.live {
			cpu[p.kind] += p.own - m.own
			reapedBy[pid] += p.reaped - m.reaped
		}
	}
	// Share out each parent's reaped time over the kinds of its children
	// that exited since the mark, by the CPU last seen of each.
	for parent, d := range reapedBy {
		if d <= 0 {
			continue
		}
		var kinds []string
		var weights []time.Duration
		var sum time.Duration
		for pid, p := range s.seen {
			if p.live || p.ppid != parent {
				continue
			}
			if m, ok := mark[pid]; ok && !m.live {
				continue // exited before the mark
			}
			w := p.own + p.reaped - mark[pid].own - mark[pid].reaped
			d -= mark[pid].own + mark[pid].reaped // spent before the mark
			kinds, weights, sum = append(kinds, p.kind), append(weights, max(w, 1)), sum+max(w, 1)
		}
		if len(kinds) == 0 {
			cpu["exited"] += d
			continue
		}
		for i, k := range kinds {
			cpu[k] += time.Duration(float64(d) * float64(weights[i]) / float64(sum))
		}
	}
	// Forget the processes that exited: the next mark starts from here.
	for pid, p := range s.seen {
		if !p.live {
			delete(s.seen, pid)
		}
	}
	return cpu, started
}

// BenchmarkBrowserCaseShapes shares out the CPU of a browser case by what
// it does: ten cases that open one page of the sample shop (the browser
// context, the renderer it starts and the load), ten that open two, and
// ten of BenchmarkBrowserSuite's cases (two pages and eleven element
// steps), run one at a time in turns on one warm pool. <shape>-cpu-ms/case
// is the CPU of the Go process and Chromium's per case, and
// <shape>-<process>-ms/case the share of the renderers and the browser
// process; the differences between the shapes are what a page and the
// element steps cost.
//
//	go test -run '^$' -bench BenchmarkBrowserCaseShapes -benchtime 3x ./internal/engine/
func BenchmarkBrowserCaseShapes(b *testing.B) {
	requireBrowser(b)
	shop := sampletest.Shop(b)
	db := openStore(b)
	const cases = 10
	shaped := func(name string, steps ...string) string {
		var y strings.Builder
		fmt.Fprintf(&y, "task: {name: %s, baseURL: %s}\ncases:\n", name, shop)
		for i := range cases {
			fmt.Fprintf(&y, "  - key: case-%d\n    title: case %d\n    steps:\n", i, i)
			for _, s := range steps {
				fmt.Fprintf(&y, "      - %s\n", s)
			}
		}
		return y.String()
	}
	shapes := []string{"one-page", "two-pages", "suite-case"}
	tasks := map[string]*duet.Task{
		"one-page":   applyB(b, db, shaped("shape-one", "open: /login")),
		"two-pages":  applyB(b, db, shaped("shape-two", "open: /login", "open: /order?orderId=A1001")),
		"suite-case": applyB(b, db, shopSuite(shop, "shape-suite", cases)),
	}
	pool := browser.NewPool(browser.Options{Guard: &netguard.Policy{}})
	defer pool.Close()
	w := engine.NewWorker(db, engine.New(db, engine.Options{Browser: app.NewBrowser(pool), Parallel: 1}), engine.WorkerOptions{})
	sampler := newProcSampler(os.Getpid())
	defer sampler.stop()
	cpu := map[string]map[string]time.Duration{}
	runOnce := func(shape string) map[string]time.Duration {
		run := createRun(b, db, tasks[shape])
		before := sampler.mark()
		if ok, err := w.ExecuteRun(b.Context(), run.ID); !ok || err != nil {
			b.Fatalf("ExecuteRun: %v, %v", ok, err)
		}
		shares, _ := sampler.since(before)
		if final, err := db.FindRunByID(b.Context(), "", run.ID); err != nil || final.Status != duet.StatusPassed {
			b.Fatalf("run of %s: got %v, %v; want passed", shape, final.Status, err)
		}
		return shares
	}
	for _, shape := range shapes {
		runOnce(shape) // warm: the browser is started, the pages cached
		cpu[shape] = map[string]time.Duration{}
	}
	for b.Loop() {
		for _, shape := range shapes {
			for k, d := range runOnce(shape) {
				cpu[shape][k] += d
			}
		}
	}
	per := float64(b.N * cases)
	for _, shape := range shapes {
		var total time.Duration
		for _, d := range cpu[shape] {
			total += d
		}
		b.ReportMetric(float64(total.Microseconds())/1e3/per, shape+"-cpu-ms/case")
		for _, k := range []string{"renderer", "browser"} {
			b.ReportMetric(float64(cpu[shape][k].Microseconds())/1e3/per, shape+"-"+k+"-ms/case")
		}
	}
}
