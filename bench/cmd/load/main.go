// Command load measures Duet's MCP server and prints ratio tables (make
// bench runs it). In one run:
//
//  1. The load matrix (matrix.go): get_test_task against Duet governed, a
//     bare go-sdk server, a bare mark3labs/mcp-go server and a hand-written
//     floor, each a separate process, at the concurrencies of -cs, over
//     Streamable HTTP with a 2025-11-25 client, with a 2026-07-28 client,
//     and over stdio: req/s, p50/p99, errors, server CPU per call, ratios.
//  2. The cost of the protocol boundary apart from the work: the same catalog
//     call in-process, over stdio (duet mcp) and over HTTP (duet serve), one
//     at a time.
//  3. `duet mcp` cold start to the first result.
//  4. Run throughput of http-step cases (engine and workers in-process
//     against a local HTTP server).
//  5. invoke() against a direct go-sdk call, and a catalog sync of 1,000
//     tools (the Go benchmarks of internal/mcpclient; invoke.go).
//  6. Lists as the store grows (growth.go): every list a user reads on a
//     near-empty store and after -grow tasks (and runs, audit rows,
//     invocations, assets) of other users, on SQLite and PostgreSQL.
//  7. Scale-out on PostgreSQL (-postgres URL): governed get_test_task
//     req/s at -c with one and two `duet serve` instances on PostgreSQL
//     beside one on SQLite, and run throughput of http-step cases with one
//     and two `duet worker` processes (scale.go).
//  8. Browser cases (browser.go): the 20-case browser suite one and two
//     cases at a time, a warm pool's new context, and the cost of tracing
//     on-failure (the Go benchmarks of internal/engine and internal/browser).
//
// It ends with the goals of issue 15 against what the run measured.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	duetBin  = flag.String("duet", "", "duet binary")
	benchBin = flag.String("benchserver", "", "benchserver binary")
	conc     = flag.Int("c", 32, "concurrent clients (scale section)")
	concList = flag.String("cs", "1,32,64", "concurrency levels of the load matrix")
	invokeN  = flag.String("invoke-benchtime", "2000x", "invoke section: -benchtime of BenchmarkInvokeOverhead")
	grow     = flag.Int("grow", 100000, "growth section: tasks (and runs, audit rows, invocations, assets) of other users added")
	onlyTr   = flag.String("transports", "http-2025,http-2026,stdio", "transports of the load matrix")
	dur      = flag.Duration("d", 10*time.Second, "duration of each load run")
	warm     = flag.Duration("warmup", 2*time.Second, "warm-up before each load run")
	seqN     = flag.Int("n", 2000, "calls per boundary measurement")
	only     = flag.String("only", "", "comma-separated sections to run: load,boundary,cold,runs,invoke,growth,trips,scale,browser (default all)")
	browserN = flag.String("browser-benchtime", "3x", "browser section: -benchtime of BenchmarkBrowserSuite and BenchmarkTraceCost")
	rounds   = flag.Int("rounds", 3, "scale section: rounds of each row, interleaved (medians are reported)")
	pgURL    = flag.String("postgres", os.Getenv("DUET_TEST_POSTGRES_URL"), "PostgreSQL server for the scale section (default $DUET_TEST_POSTGRES_URL; a schema is created and dropped)")
	targets  = flag.String("targets", "duet,gosdk,mcpgo,floor", "load targets")
	suite    = flag.String("suite", "examples/api-smoke.yaml", "suite to seed Duet with (relative to the repository)")
	repo     = flag.String("repo", "..", "repository root")
	duetEnv  = flag.String("duet-env", "", "extra environment for duet serve (comma-separated K=V), e.g. GOGC=400")
)

const gatewayKey = "bench-key"

func want(section string) bool {
	return *only == "" || slices.Contains(strings.Split(*only, ","), section)
}

func main() {
	if os.Getenv(exitAtMain) == "1" { // processStart's baseline
		os.Exit(0)
	}
	flag.Parse()
	log.SetFlags(0)
	if *duetBin == "" || *benchBin == "" {
		log.Fatal("usage: load -duet PATH -benchserver PATH [-c 32] [-d 10s]")
	}
	tmp, err := os.MkdirTemp("", "duet-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	home := filepath.Join(tmp, "home")
	seed(home)

	var m matrix
	var cold time.Duration
	var invoke float64
	var growth map[string]float64
	if want("load") {
		m = matrixTable(home)
	}
	if want("boundary") {
		boundaryTable(home)
	}
	if want("cold") {
		cold = coldStart(home)
	}
	if want("runs") {
		runThroughput(filepath.Join(tmp, "runs"))
	}
	if want("invoke") {
		invoke = invokeTable()
	}
	if want("growth") {
		growth = growthTable(filepath.Join(tmp, "growth"))
	}
	if want("trips") {
		tripsOK, tripsGetTask, tripsStart = tripsTable(filepath.Join(tmp, "trips"))
	}
	if want("scale") {
		scaleTables(home, filepath.Join(tmp, "scale"))
	}
	if want("browser") {
		browserTable()
	}
	goals(m, cold, invoke, growth)
}

// seed applies the suite as alice.
func seed(home string) {
	cmd := exec.Command(*duetBin, "apply", "-f", filepath.Join(*repo, *suite), "--as", "alice")
	cmd.Env = append(os.Environ(), "DUET_HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("seeding: %v\n%s", err, out)
	}
}

// proc is a server process under measurement.
type proc struct {
	cmd   *exec.Cmd
	url   string
	done  chan struct{}
	stdin io.Closer // stdio servers: closing it ends them
}

func (p *proc) stop() {
	if p.stdin != nil {
		p.stdin.Close()
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// cpu returns the process's user+system CPU time.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// start runs cmd and waits for a line matching re (group 1 = address).
func start(cmd *exec.Cmd, re *regexp.Regexp, path string) *proc {
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); w.Close(); close(p.done) }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a + path
	case <-p.done:
		log.Fatalf("%s exited before listening", cmd.Path)
	case <-time.After(30 * time.Second):
		log.Fatalf("%s did not listen within 30s", cmd.Path)
	}
	return p
}

func startDuet(home string, extraEnv ...string) *proc {
	cmd := exec.Command(*duetBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DUET_HOME="+home, "DUET_GATEWAY_API_KEYS="+gatewayKey,
		// One caller drives all the load: lift the per-caller cap above -c.
		"DUET_MAX_PER_CALLER=1024", "DUET_MAX_CONCURRENT=1024")
	if *duetEnv != "" {
		cmd.Env = append(cmd.Env, strings.Split(*duetEnv, ",")...)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	return start(cmd, regexp.MustCompile(`msg="duet serving" addr=(\S+)`), "/mcp/http")
}

func startBench(kind string) *proc {
	return start(exec.Command(*benchBin, "-kind", kind), regexp.MustCompile(`^listening (\S+)`), "/mcp")
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 1024}}

// post sends one JSON-RPC request the way a stateless 2025-06-18 client
// does and returns the body.
func post(url, body string) ([]byte, int, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("SSO-Emp-Id", "alice")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

func callBody(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// taskID asks Duet for alice's first task.
func taskID(url string) string {
	b, _, err := post(url, callBody(1, "list_test_tasks", "{}"))
	if err != nil {
		log.Fatal(err)
	}
	m := regexp.MustCompile(`"id":"(task_[a-z0-9]+)"`).FindSubmatch(b)
	if m == nil {
		log.Fatalf("no task in %s", b)
	}
	return string(m[1])
}

type loadResult struct {
	name     string
	n, errs  int
	elapsed  time.Duration
	p50, p99 time.Duration
	cpu      time.Duration
	dbCPU    time.Duration // of the database server's backends (PostgreSQL)
}

func (r loadResult) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

// hammerAll runs conc clients posting body for -d after a warm-up, spread
// over ps round-robin as a load balancer without sticky sessions would;
// the CPU is that of every process of ps, plus extra (database backends).
func hammerAll(name string, ps []*proc, conc int, body string, extra func() time.Duration) loadResult {
	cpu := func() time.Duration {
		var d time.Duration
		for _, p := range ps {
			d += p.cpu()
		}
		return d
	}
	run := func(d time.Duration) ([]time.Duration, int) {
		return driveEach(conc, d, func(client int) bool {
			b, status, err := post(ps[client%len(ps)].url, body)
			return err == nil && status == 200 && bytes.Contains(b, []byte(`"structuredContent"`)) && !bytes.Contains(b, []byte(`"isError":true`))
		})
	}
	run(*warm)
	var x0 time.Duration
	if extra != nil {
		x0 = extra()
	}
	c0, t0 := cpu(), time.Now()
	lat, errs := run(*dur)
	r := loadResult{name: name, n: len(lat), errs: errs, elapsed: time.Since(t0), cpu: cpu() - c0}
	if extra != nil {
		r.dbCPU = extra() - x0
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}

func round(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	}
}

// ctx is the context of every call: the program's whole life (it stops
// itself; each section is bounded by -d and -n).
func ctx() context.Context { return context.Background() }

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
