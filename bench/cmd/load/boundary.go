package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
)

func openApp(home string, extra map[string]string) *app.App {
	env := map[string]string{"DUET_HOME": home, "DUET_LOG_LEVEL": "warn"}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		log.Fatal(err)
	}
	a, err := app.Open(ctx(), cfg, app.Options{Stderr: io.Discard})
	if err != nil {
		log.Fatal(err)
	}
	return a
}

// applySuite compiles the suite src as alice would apply it to a and
// applies it (the suite's file is home/suite.yaml, for its messages).
func applySuite(a *app.App, home, src string) *duet.ApplyResult {
	s, err := compiler.CompileSuite(ctx(), []byte(src), filepath.Join(home, "suite.yaml"), a.CompilerOptions(ctx(), "alice"))
	if err != nil {
		log.Fatal(err)
	}
	applied, err := a.Store.ApplySuite(ctx(), "alice", s)
	if err != nil {
		log.Fatal(err)
	}
	return applied
}

type timing struct{ mean, p50, p99 time.Duration }

func measure(n int, f func()) timing {
	lat := make([]time.Duration, 0, n)
	for range n / 10 { // warm-up
		f()
	}
	t0 := time.Now()
	for range n {
		s := time.Now()
		f()
		lat = append(lat, time.Since(s))
	}
	total := time.Since(t0)
	slices.Sort(lat)
	return timing{total / time.Duration(n), lat[n/2], lat[n*99/100]}
}

// boundaryTable measures one get_test_task call, one at a time, in-process
// (catalog.Call), over stdio (duet mcp) and over HTTP (duet serve).
func boundaryTable(home string) {
	fmt.Printf("\n## The protocol boundary: get_test_task, one call at a time, %d calls each\n\n", *seqN)
	// In-process: the same catalog call, governance included, no transport.
	// (A copy of the home: a second process may hold the first.)
	a := openApp(home, nil)
	id := taskID0(a)
	args := json.RawMessage(fmt.Sprintf(`{"taskId":%q}`, id))
	caller := duet.Caller{UserID: "alice", Source: duet.SourceCLI}
	inproc := measure(*seqN, func() {
		res, err := a.Catalog.Call(ctx(), catalog.Request{Caller: caller, Tool: catalog.ToolGetTask, Args: args})
		if err != nil || res.IsError {
			log.Fatalf("in-process: %+v %v", res, err)
		}
	})
	a.Close()

	// stdio: the go-sdk client and a duet mcp process.
	cs := startMCP(home)
	params := &mcp.CallToolParams{Name: catalog.ToolGetTask, Arguments: map[string]any{"taskId": id}}
	stdio := measure(*seqN, func() {
		if res, err := cs.CallTool(ctx(), params); err != nil || res.IsError {
			log.Fatalf("stdio: %+v %v", res, err)
		}
	})
	cs.Close()

	// HTTP: duet serve, one connection, raw stateless requests.
	p := startDuet(home)
	body := callBody(7, catalog.ToolGetTask, string(args))
	httpT := measure(*seqN, func() {
		if b, status, err := post(p.url, body); err != nil || status != 200 {
			log.Fatalf("http: %d %s %v", status, b, err)
		}
	})
	p.stop()

	fmt.Println("| path | mean | p50 | p99 | boundary (mean − in-process) |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, r := range []struct {
		name string
		t    timing
	}{{"in-process catalog.Call", inproc}, {"stdio (duet mcp, go-sdk client)", stdio}, {"Streamable HTTP (duet serve)", httpT}} {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.name, round(r.t.mean), round(r.t.p50), round(r.t.p99), round(r.t.mean-inproc.mean))
	}
}

// startMCP starts `duet mcp` on home as alice and connects the go-sdk
// client to it over stdio.
func startMCP(home string) *mcp.ClientSession {
	cmd := exec.Command(*duetBin, "mcp")
	cmd.Env = append(os.Environ(), "DUET_HOME="+home, "DUET_USER=alice")
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		log.Fatal(err)
	}
	return cs
}

func taskID0(a *app.App) string {
	tasks, _, _, err := a.Store.FindTasks(ctx(), duet.TaskFilter{Viewer: "alice", Limit: 1})
	if err != nil || len(tasks) == 0 {
		log.Fatalf("no task: %v", err)
	}
	return tasks[0].ID
}

// coldStart measures `duet mcp` from exec to the first tools/call result.
func coldStart(home string) time.Duration {
	const runs = 7
	a := openApp(home, nil)
	id := taskID0(a)
	a.Close()
	var ts []time.Duration
	for range runs {
		t0 := time.Now()
		cs := startMCP(home)
		if res, err := cs.CallTool(ctx(), &mcp.CallToolParams{Name: catalog.ToolGetTask, Arguments: map[string]any{"taskId": id}}); err != nil || res.IsError {
			log.Fatalf("cold start: %+v %v", res, err)
		}
		ts = append(ts, time.Since(t0))
		cs.Close()
	}
	slices.Sort(ts)
	fmt.Printf("\n## `duet mcp` cold start to the first tools/call result (%d runs)\n\nmedian %s, min %s, max %s\n", runs, round(ts[runs/2]), round(ts[0]), round(ts[runs-1]))
	// The host's own cost of starting a Go program of duet's size: this
	// tool (which links most of duet's packages) started with exitAtMain,
	// so that it runs the Go runtime's and every package's initialisation
	// and exits as main begins. On some virtual machines a page fault costs
	// tens of microseconds, and the first run of a large binary takes over
	// a thousand of them, which no change to duet's own start takes away.
	if t := processStart(runs); t > 0 {
		coldBaseline = t
		fmt.Printf("\nthe baseline, a Go program of duet's size that exits as main begins (this tool), median of %d: %s (cold start ÷ it: %.1fx)\n", runs, round(t), float64(ts[runs/2])/float64(t))
	}
	return ts[runs/2]
}

// coldBaseline is processStart's median of this run, for the goals table.
var coldBaseline time.Duration

// exitAtMain, set to 1, makes this tool exit as main begins.
const exitAtMain = "DUET_BENCH_EXIT_AT_MAIN"

// processStart returns the median time to start this tool with
// exitAtMain and wait for it; 0 when it cannot.
func processStart(runs int) time.Duration {
	self, err := os.Executable()
	if err != nil {
		return 0
	}
	var ts []time.Duration
	for range runs {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), exitAtMain+"=1")
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return 0
		}
		ts = append(ts, time.Since(t0))
	}
	slices.Sort(ts)
	return ts[runs/2]
}

// httpSuite is the source of task name, cases cases of an http step (an
// order read from a local HTTP server, which stop stops) and an assertion.
func httpSuite(name string, cases int) (src string, stop func()) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"A1001","status":"paid"}`))
	}))
	src = fmt.Sprintf("task: {name: %s, baseURL: %q}\ncases:\n", name, target.URL)
	for i := range cases {
		src += fmt.Sprintf("  - key: c%03d\n    title: case %d\n    steps:\n      - http: {url: /api/orders/A1001, saveAs: o}\n      - assert: o.status == 200 && o.body.status == \"paid\"\n", i, i)
	}
	return src, target.Close
}

// runThroughput runs a task of http-step cases against a local HTTP server
// with the engine and workers of a duet in this process.
func runThroughput(home string) {
	const cases = 200
	src, stop := httpSuite("http-bench", cases)
	defer stop()
	os.MkdirAll(home, 0o700)
	a := openApp(home, map[string]string{"DUET_WORKERS": "2", "DUET_PARALLEL": "8"})
	defer a.Close()
	applied := applySuite(a, home, src)
	wctx, stop := contextWithCancel()
	defer stop()
	go a.Worker.Run(wctx)
	caller := duet.Caller{UserID: "alice", Source: duet.SourceCLI}
	t0 := time.Now()
	res, err := a.Catalog.Call(ctx(), catalog.Request{Caller: caller, Tool: catalog.ToolStartRun,
		Args: json.RawMessage(fmt.Sprintf(`{"taskId":%q,"idempotencyKey":"bench"}`, applied.Task.ID))})
	if err != nil || res.IsError {
		log.Fatalf("start_test_run: %+v %v", res, err)
	}
	var started catalog.StartRunOut
	json.Unmarshal(res.Structured, &started)
	var run catalog.GetRunOut
	for {
		res, err := a.Catalog.Call(ctx(), catalog.Request{Caller: caller, Tool: catalog.ToolGetRun,
			Args: json.RawMessage(fmt.Sprintf(`{"runId":%q}`, started.RunID))})
		if err != nil || res.IsError {
			log.Fatalf("get_test_run: %+v %v", res, err)
		}
		json.Unmarshal(res.Structured, &run)
		if run.Run.Done {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	el := time.Since(t0)
	fmt.Printf("\n## Run throughput: %d http-step cases (2 steps each) in one run, DUET_PARALLEL=8\n\nstatus %s in %s: %.0f cases/s\n",
		cases, run.Run.Status, round(el), float64(cases)/el.Seconds())
}
