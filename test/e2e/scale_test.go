package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	core "github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestScaleOutOnPostgres runs Duet as a team that outgrew one machine would:
// two `duet serve` instances (API only, as behind a load balancer without
// sticky sessions) and two `duet worker` processes, each with its own
// DUET_HOME, all on one PostgreSQL, sharing only the database, the master
// key and the artifact directory. It shows, in order:
//   - 100 concurrent identical start_test_run calls spread over both serve
//     instances create one run (and leave 100 audit records);
//   - 200 runs of four users, started at once over both instances, are each
//     executed exactly once, none lost, the users interleaved;
//   - kill -9 of the worker holding a run: the other worker takes the run
//     over when the lease runs out and finishes it; the finished case is
//     kept, the interrupted one re-run, the report whole;
//   - a cancellation recorded anywhere reaches the worker holding the run
//     (another process) and aborts its step within a second;
//   - a report (with a screenshot) written by a worker is served whole by
//     either serve instance;
//   - PostgreSQL restarted under load: /readyz says so on both instances and
//     recovers within seconds of the database's return, callers get
//     UNAVAILABLE (never INTERNAL) meanwhile, no run is lost;
//   - SIGTERM stops every process cleanly and closes every connection.
func TestScaleOutOnPostgres(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	sys := newScaleAPI(t)
	var keyBytes [32]byte
	rand.Read(keyBytes[:])
	common := []string{
		"DUET_DATABASE_URL=" + cluster.URL,
		"DUET_ARTIFACT_DIR=" + filepath.Join(t.TempDir(), "artifacts"),
		"DUET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(keyBytes[:]),
		"DUET_GATEWAY_API_KEYS=" + gatewayKey,
		"DUET_RUN_LEASE=5s",
		"DUET_MAX_PER_CALLER=256", "DUET_MAX_CONCURRENT=512", "DUET_MAX_QUEUED_RUNS=100", "DUET_MAX_RUNS_PER_MINUTE=1000",
		"DUET_DATABASE_CONNECT_TIMEOUT=1s",
	}
	ctx := t.Context()
	store, err := postgres.Open(ctx, cluster.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	// The suites, applied through the CLI on the shared database.
	users := []string{"u1", "u2", "u3", "u4"}
	for _, u := range users {
		applySuite(t, common, u, fmt.Sprintf(`task: {name: queue, baseURL: %q}
cases:
  - key: hit
    title: hit once
    steps: [{http: {url: "/hit/${run.id}", saveAs: r}}, {assert: r.status == 200}]
`, sys.URL))
	}
	applySuite(t, common, "alice", fmt.Sprintf(`task: {name: crash, baseURL: %q}
cases:
  - key: a-fast
    title: fast
    steps: [{http: {url: "/hit/${run.id}-fast", saveAs: r}}, {assert: r.status == 200}]
  - key: b-slow
    title: slow
    steps: [{http: {url: "/block/${run.id}", saveAs: s}, timeout: 1m}, {assert: s.status == 200}, {http: {url: "/hit/${run.id}-after", saveAs: r}}]
`, sys.URL))
	applySuite(t, common, "alice", fmt.Sprintf(`task: {name: page, baseURL: %q}
cases:
  - key: shot
    title: a page and its screenshot
    steps: [{open: /page}, {assertText: {selector: h1, equals: Orders}}, {screenshot: the orders page}]
`, sys.URL))
	applySuite(t, common, "alice", fmt.Sprintf(`task: {name: load, baseURL: %q}
cases:
  - key: slowish
    title: a step that takes a while
    steps: [{http: {url: "/sleep/${run.id}", saveAs: r}, timeout: 1m}, {assert: r.status == 200}]
`, sys.URL))

	serveEnv := append([]string{"DUET_WORKERS=0"}, common...)
	workerEnv := append([]string{"DUET_WORKERS=4", "DUET_PARALLEL=2"}, common...)
	serveA := startScaleProc(t, "serve", serveEnv)
	serveB := startScaleProc(t, "serve", serveEnv)
	workers := []*scaleProc{startScaleProc(t, "worker", workerEnv), startScaleProc(t, "worker", workerEnv)}
	serves := []*scaleProc{serveA, serveB}
	taskOf := func(owner, name string) string {
		tk, err := store.FindTaskByName(ctx, owner, name)
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}

	t.Run("OneRunFrom100IdenticalStarts", func(t *testing.T) {
		task := taskOf("u1", "queue")
		var wg sync.WaitGroup
		outs := make([]toolOutcome, 100)
		for i := range outs {
			wg.Go(func() {
				outs[i] = mcpTool(serves[i%2].URL, "u1", "start_test_run", map[string]any{"taskId": task, "idempotencyKey": "same-100"})
			})
		}
		wg.Wait()
		runIDs := map[string]int{}
		for i, o := range outs {
			if o.Err != nil || o.Code != "" {
				t.Fatalf("call %d (serve %d): %+v", i, i%2, o)
			}
			runIDs[o.Out["runId"].(string)]++
		}
		runs, _, err := store.FindRuns(ctx, core.RunFilter{TaskID: task, Limit: 100})
		if len(runIDs) != 1 || err != nil || len(runs) != 1 {
			t.Fatalf("100 identical calls: runIds %v, %d runs in the database (%v), want one", runIDs, len(runs), err)
		}
		waitUntil(t, 30*time.Second, "100 audit records of start_test_run from both instances", func() bool {
			recs, _ := store.FindAudit(ctx, core.AuditFilter{Tool: "start_test_run", Caller: "u1", Limit: 1000})
			return len(recs) == 100
		})
		waitRunsFinal(t, store, []string{runs[0].ID}, 60*time.Second)
	})

	t.Run("200QueuedRunsOfMixedUsers", func(t *testing.T) {
		// Two clients, one per serve instance, each starting 100 runs for
		// the four users in turn: the users' runs arrive mixed.
		var mu sync.Mutex
		owner := map[string]string{}
		tasks := map[string]string{}
		for _, u := range users {
			tasks[u] = taskOf(u, "queue")
		}
		var wg sync.WaitGroup
		for g, s := range serves {
			wg.Go(func() {
				for i := range 100 {
					u := users[i%len(users)]
					o := mcpTool(s.URL, u, "start_test_run", map[string]any{"taskId": tasks[u], "idempotencyKey": fmt.Sprintf("q-%d-%d", g, i)})
					if o.Err != nil || o.Code != "" {
						t.Errorf("%s start %d: %+v", u, i, o)
						return
					}
					mu.Lock()
					owner[o.Out["runId"].(string)] = u
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(owner) != 200 {
			t.Fatalf("started %d runs, want 200", len(owner))
		}
		ids := slices.Collect(mapKeys(owner))
		final := waitRunsFinal(t, store, ids, 3*time.Minute)
		type start struct {
			at   time.Time
			user string
		}
		var starts []start
		for _, r := range final {
			if r.Status != core.StatusPassed || r.Attempt != 1 {
				t.Errorf("run %s of %s: %s, attempt %d; want passed at the first attempt", r.ID, owner[r.ID], r.Status, r.Attempt)
			}
			if n := sys.hits(r.ID); n != 1 {
				t.Errorf("run %s executed %d times, want exactly once", r.ID, n)
			}
			starts = append(starts, start{*r.StartedAt, owner[r.ID]})
		}
		// Interleaving: the queue serves the users' runs in the mixed
		// order they arrived, first come first served across processes:
		// no user waits for another's runs to drain, each has runs among
		// every 80 consecutive starts. (A fair order for bursts of one
		// user's runs is the claim's scheduling policy: docs/architecture.md.)
		slices.SortFunc(starts, func(a, b start) int { return a.at.Compare(b.at) })
		for lo := 0; lo+80 <= len(starts); lo += 40 {
			seen := map[string]int{}
			for _, s := range starts[lo : lo+80] {
				seen[s.user]++
			}
			for _, u := range users {
				if seen[u] == 0 {
					t.Errorf("runs %d to %d started: none of %s's (%v)", lo, lo+80, u, seen)
				}
			}
		}
		// Each run finished in exactly one worker process, and both
		// processes took part.
		finishedBy := map[string][]string{}
		byWorker := map[string]int{}
		runRe := regexp.MustCompile(`msg="run finished" run=(\S+)`)
		for _, w := range workers {
			for _, m := range runRe.FindAllStringSubmatch(w.Log(), -1) {
				if owner[m[1]] != "" {
					finishedBy[m[1]] = append(finishedBy[m[1]], w.ID)
					byWorker[w.ID]++
				}
			}
		}
		for id := range owner {
			if len(finishedBy[id]) != 1 {
				t.Errorf("run %s finished by %v, want exactly one worker", id, finishedBy[id])
			}
		}
		if len(byWorker) != 2 {
			t.Errorf("runs per worker process: %v, want both workers executing", byWorker)
		}
		t.Logf("200 runs executed exactly once, users interleaved; runs per worker process: %v", byWorker)
	})

	t.Run("KillWorkerMidRun", func(t *testing.T) {
		task := taskOf("alice", "crash")
		o := mcpTool(serveA.URL, "alice", "start_test_run", map[string]any{"taskId": task, "idempotencyKey": "crash"})
		if o.Err != nil || o.Code != "" {
			t.Fatalf("start: %+v", o)
		}
		runID := o.Out["runId"].(string)
		waitUntil(t, 60*time.Second, "the slow case to block and the fast one to pass", func() bool {
			execs, _ := store.FindExecutions(ctx, runID)
			return sys.isBlocked(runID) && len(execs) == 2 && execs[0].Status == core.StatusPassed
		})
		var holder string
		if err := store.Pool().QueryRow(ctx, `SELECT lease_owner FROM runs WHERE id = $1`, runID).Scan(&holder); err != nil {
			t.Fatal(err)
		}
		var victim *scaleProc
		for _, w := range workers {
			if w.ID == holder {
				victim = w
			}
		}
		if victim == nil {
			t.Fatalf("the run is held by %q, not by a worker process", holder)
		}
		killed := time.Now()
		victim.Kill9(t)
		final := waitRunsFinal(t, store, []string{runID}, 60*time.Second)[0]
		took := time.Since(killed)
		execs, _ := store.FindExecutions(ctx, runID)
		if final.Status != core.StatusPassed || final.Attempt != 2 {
			t.Fatalf("after kill -9 of its worker: run %s at attempt %d (%s), want passed at attempt 2", final.Status, final.Attempt, final.ErrorMessage)
		}
		for _, x := range execs {
			if !x.Status.Final() || len(x.Results) != len(x.Steps) {
				t.Fatalf("execution %s: %s with %d of %d step results: the report is not whole", x.CaseKey, x.Status, len(x.Results), len(x.Steps))
			}
		}
		if sys.hits(runID+"-fast") != 1 || sys.hits(runID+"-after") != 1 || sys.blocks(runID) != 2 {
			t.Fatalf("fast case ran %d times (want 1: kept), slow case started %d times (want 2: re-run), finished %d times (want 1)",
				sys.hits(runID+"-fast"), sys.blocks(runID), sys.hits(runID+"-after"))
		}
		t.Logf("kill -9 of %s: the run was taken over and finished %s later", holder, took.Round(100*time.Millisecond))
		workers = append(workers, startScaleProc(t, "worker", workerEnv))
	})

	t.Run("CancelReachesTheHoldingWorker", func(t *testing.T) {
		o := mcpTool(serveB.URL, "alice", "start_test_run", map[string]any{"taskId": taskOf("alice", "crash"), "idempotencyKey": "cancel"})
		if o.Err != nil || o.Code != "" {
			t.Fatalf("start: %+v", o)
		}
		runID := o.Out["runId"].(string)
		waitUntil(t, 60*time.Second, "the slow step to block", func() bool { return sys.isBlocked(runID) })
		// Any instance records the request (here the test's own handle on
		// the database); the worker holding the run, in another process,
		// must notice and abort the step in flight within a second.
		if _, err := store.RequestCancel(ctx, "alice", runID); err != nil {
			t.Fatal(err)
		}
		asked := time.Now()
		waitUntil(t, 10*time.Second, "the worker to abort the blocked step", func() bool { return !sys.abortedAt(runID).IsZero() })
		took := sys.abortedAt(runID).Sub(asked)
		final := waitRunsFinal(t, store, []string{runID}, 30*time.Second)[0]
		if final.Status != core.StatusCancelled || took > time.Second {
			t.Fatalf("cancellation: run %s, the step aborted %s after the request; want cancelled within 1s", final.Status, took)
		}
		t.Logf("cancellation reached the holding worker in %s", took.Round(time.Millisecond))
	})

	t.Run("ReportServedByEitherInstance", func(t *testing.T) {
		if err := browser.NewPool(browser.Options{}).Available(); err != nil {
			if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
				t.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
			}
			t.Skipf("no Chromium: %v", err)
		}
		o := mcpTool(serveA.URL, "alice", "start_test_run", map[string]any{"taskId": taskOf("alice", "page"), "idempotencyKey": "page"})
		if o.Err != nil || o.Code != "" {
			t.Fatalf("start: %+v", o)
		}
		runID := o.Out["runId"].(string)
		if r := waitRunsFinal(t, store, []string{runID}, 90*time.Second)[0]; r.Status != core.StatusPassed {
			t.Fatalf("page run: %s %s", r.Status, r.ErrorMessage)
		}
		var reports []map[string]any
		var shots []string
		for _, s := range serves {
			html := readResource(t, s.URL, "alice", "duet://runs/"+runID+"/report.html")
			m := regexp.MustCompile(`data:image/png;base64,[A-Za-z0-9+/=]+`).FindString(html)
			if m == "" {
				t.Fatalf("the HTML report from %s has no screenshot", s.URL)
			}
			shots = append(shots, m)
			var rep map[string]any
			if err := json.Unmarshal([]byte(readResource(t, s.URL, "alice", "duet://runs/"+runID+"/report.json")), &rep); err != nil {
				t.Fatal(err)
			}
			delete(rep, "generatedAt")
			reports = append(reports, rep)
		}
		if shots[0] != shots[1] {
			t.Fatal("the two instances embed different screenshots")
		}
		a, _ := json.Marshal(reports[0])
		b, _ := json.Marshal(reports[1])
		if !bytes.Equal(a, b) || bytes.Contains(a, []byte(`"unavailable"`)) {
			t.Fatalf("the JSON reports differ or miss a screenshot:\n%s\n%s", a, b)
		}
	})

	t.Run("DatabaseRestartUnderLoad", func(t *testing.T) {
		task := taskOf("alice", "load")
		var runIDs []string
		for i := range 12 {
			o := mcpTool(serves[i%2].URL, "alice", "start_test_run", map[string]any{"taskId": task, "idempotencyKey": fmt.Sprintf("load-%d", i)})
			if o.Err != nil || o.Code != "" {
				t.Fatalf("start %d: %+v", i, o)
			}
			runIDs = append(runIDs, o.Out["runId"].(string))
		}
		getTask := taskOf("u1", "queue")
		since := time.Now()
		var stop atomic.Bool
		var mu sync.Mutex
		outcomes := map[string]int{}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					o := mcpTool(serves[(g+i)%2].URL, "u1", "get_test_task", map[string]any{"taskId": getTask})
					k := o.Code
					switch {
					case o.Err != nil:
						k = "transport: " + o.Err.Error()
					case k == "":
						k = "OK"
					}
					mu.Lock()
					outcomes[k]++
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		time.Sleep(time.Second)
		cluster.Stop()
		stopped := time.Now()
		for _, s := range serves {
			waitUntil(t, 15*time.Second, "/readyz to fail while the database is down", func() bool { return readyz(s.URL) == http.StatusServiceUnavailable })
		}
		down := mcpTool(serveB.URL, "alice", "start_test_run", map[string]any{"taskId": task, "idempotencyKey": "while-down"})
		time.Sleep(2 * time.Second) // a restart takes a moment; the load goes on
		cluster.Start()
		restarted := time.Now()
		for _, s := range serves {
			waitUntil(t, 20*time.Second, "/readyz to recover after the database's return", func() bool { return readyz(s.URL) == http.StatusOK })
		}
		back := time.Since(restarted)
		time.Sleep(time.Second)
		stop.Store(true)
		wg.Wait()
		t.Logf("database down for %s; both instances ready %s after its return; calls: %v", restarted.Sub(stopped).Round(100*time.Millisecond), back.Round(100*time.Millisecond), outcomes)
		if down.Code != string(core.CodeUnavailable) {
			t.Errorf("start_test_run while the database is down: got %+v, want UNAVAILABLE", down)
		}
		if outcomes[string(core.CodeUnavailable)] == 0 || outcomes["OK"] == 0 {
			t.Errorf("calls under load: %v, want OK before and after, UNAVAILABLE while down", outcomes)
		}
		for k, n := range outcomes {
			if k != "OK" && k != string(core.CodeUnavailable) {
				t.Errorf("%d calls ended %s: while the database is away callers get UNAVAILABLE, never INTERNAL", n, k)
			}
		}
		if o := mcpTool(serveA.URL, "u1", "get_test_task", map[string]any{"taskId": getTask}); o.Err != nil || o.Code != "" {
			t.Fatalf("after the restart: %+v", o)
		}
		// Every call left its audit record, those refused while the
		// database was away included: both instances kept them until it
		// came back.
		calls := outcomes["OK"] + outcomes[string(core.CodeUnavailable)] + 1
		var recs []*core.AuditRecord
		waitUntil(t, 30*time.Second, fmt.Sprintf("%d audit records of get_test_task", calls), func() bool {
			recs, _ = store.FindAudit(ctx, core.AuditFilter{Tool: "get_test_task", Caller: "u1", Since: since, Limit: 10000})
			return len(recs) >= calls
		})
		if len(recs) != calls {
			t.Errorf("audit records: got %d, want %d (one per call)", len(recs), calls)
		}
		for _, r := range waitRunsFinal(t, store, runIDs, 2*time.Minute) {
			execs, _ := store.FindExecutions(ctx, r.ID)
			if r.Status != core.StatusPassed || len(execs) != 1 || len(execs[0].Results) != 2 {
				t.Errorf("run %s across the restart: %s (%s), attempt %d; want passed with both step results", r.ID, r.Status, r.ErrorMessage, r.Attempt)
			}
		}
	})

	t.Run("GracefulStop", func(t *testing.T) {
		for _, p := range append(serves, workers...) {
			p.Term(t)
		}
		// Every instance closed its pool: the only connections left are
		// the test's own.
		var left int
		waitUntil(t, 10*time.Second, "the instances' connections to close", func() bool {
			err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = current_database()`).Scan(&left)
			return err == nil && left <= int(store.Pool().Stat().TotalConns())
		})
	})
}

// applySuite applies a suite as user through the CLI.
func applySuite(t *testing.T, env []string, user, src string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "suite.yaml")
	if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(duetBin, "apply", "-f", f, "--as", user)
	cmd.Dir = "/"
	cmd.Env = append(minimalEnv("DUET_HOME="+t.TempDir()), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply as %s: %v\n%s", user, err, out)
	}
}

// scaleProc is a running `duet serve` or `duet worker`.
type scaleProc struct {
	URL  string // serve: http://127.0.0.1:PORT
	ID   string // its worker id (in run leases)
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
}

var (
	servingRe = regexp.MustCompile(`msg="duet serving" addr=(127\.0\.0\.1:\d+).* worker=(\S+)`)
	workerRe  = regexp.MustCompile(`msg="duet worker started" id=(\S+)`)
)

// startScaleProc starts `duet serve` (on a free port) or `duet worker` with
// its own DUET_HOME and waits until it says it is up.
func startScaleProc(t *testing.T, what string, env []string) *scaleProc {
	t.Helper()
	args := []string{what}
	re := workerRe
	if what == "serve" {
		args, re = append(args, "--addr", "127.0.0.1:0"), servingRe
	}
	cmd := exec.Command(duetBin, args...)
	cmd.Dir = "/"
	cmd.Env = append(minimalEnv("DUET_HOME="+t.TempDir(), "DUET_LOG_LEVEL=info"), env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &scaleProc{cmd: cmd, done: make(chan struct{})}
	up := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case up <- m:
				default:
				}
			}
		}
		io.Copy(io.Discard, errPipe)
	}()
	go func() { cmd.Wait(); close(p.done) }()
	select {
	case m := <-up:
		if what == "serve" {
			p.URL, p.ID = "http://"+m[1], m[2]
		} else {
			p.ID = m[1]
		}
	case <-p.done:
		t.Fatalf("duet %s exited:\n%s", what, p.Log())
	case <-time.After(60 * time.Second):
		t.Fatalf("duet %s did not start:\n%s", what, p.Log())
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("duet %s %s log:\n%s", what, p.ID, p.Log())
		}
	})
	return p
}

func (p *scaleProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Kill9 kills the process with SIGKILL: no cleanup of any kind.
func (p *scaleProc) Kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// Term sends SIGTERM and expects a clean exit within 30 seconds.
func (p *scaleProc) Term(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return // killed earlier
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s exited %d after SIGTERM:\n%s", p.ID, code, p.Log())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30s of SIGTERM", p.ID)
	}
}

// toolOutcome is what one tools/call over HTTP came back with.
type toolOutcome struct {
	Out  map[string]any // structuredContent
	Code string         // the error code of an isError result
	Err  error          // transport or protocol failure
}

var scaleClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// mcpTool calls a tool over /mcp/http as a gateway would, for user.
func mcpTool(url, user, tool string, args map[string]any) toolOutcome {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	var resp struct {
		Result *struct {
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := mcpPost(url, user, body, &resp); err != nil {
		return toolOutcome{Err: err}
	}
	if resp.Result == nil {
		return toolOutcome{Err: fmt.Errorf("JSON-RPC error %v", resp.Error)}
	}
	o := toolOutcome{Out: resp.Result.StructuredContent}
	if resp.Result.IsError {
		o.Code = "(no code)"
		if e, ok := o.Out["error"].(map[string]any); ok {
			o.Code, _ = e["code"].(string)
		}
	}
	return o
}

func mcpPost(url, user string, body []byte, into any) error {
	req, _ := http.NewRequest("POST", url+"/mcp/http", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("SSO-Emp-Id", user)
	res, err := scaleClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(b)) {
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				b = []byte(d)
			}
		}
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", res.StatusCode, b)
	}
	return json.Unmarshal(b, into)
}

// readResource reads an MCP resource over /mcp/http and returns its text.
func readResource(t *testing.T, url, user, uri string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": map[string]any{"uri": uri}})
	var resp struct {
		Result *struct {
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := mcpPost(url, user, body, &resp); err != nil {
		t.Fatalf("resources/read %s from %s: %v", uri, url, err)
	}
	if resp.Result == nil || len(resp.Result.Contents) != 1 {
		t.Fatalf("resources/read %s from %s: %v", uri, url, resp.Error)
	}
	return resp.Result.Contents[0].Text
}

func readyz(url string) int {
	res, err := scaleClient.Get(url + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitRunsFinal waits until every run is in a final state and returns them.
func waitRunsFinal(t *testing.T, store core.Store, ids []string, d time.Duration) []*core.Run {
	t.Helper()
	out := make([]*core.Run, len(ids))
	waitUntil(t, d, fmt.Sprintf("%d runs to finish", len(ids)), func() bool {
		for i, id := range ids {
			if out[i] != nil && out[i].Status.Final() {
				continue
			}
			r, err := store.FindRunByID(context.Background(), "", id)
			if err != nil || !r.Status.Final() {
				return false
			}
			out[i] = r
		}
		return true
	})
	return out
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// scaleAPI is the system under test of the scale-out scenarios: it counts
// hits per key (each hit takes 50 ms), blocks the first request of /block/KEY until its client
// goes away (a killed worker), sleeps on /sleep and serves a page to take a
// screenshot of.
type scaleAPI struct {
	*httptest.Server
	mu      sync.Mutex
	count   map[string]int
	blocked map[string]int
	aborted map[string]time.Time
}

func newScaleAPI(t *testing.T) *scaleAPI {
	a := &scaleAPI{count: map[string]int{}, blocked: map[string]int{}, aborted: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hit/{key}", func(w http.ResponseWriter, r *http.Request) {
		// A run takes a moment, as real ones do: 200 queued runs are
		// more work than one process drains between two polls of the
		// other (engine.WorkerOptions.PollInterval, 1s), so both take
		// part whatever the machine's load.
		time.Sleep(50 * time.Millisecond)
		a.mu.Lock()
		a.count[r.PathValue("key")]++
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("GET /block/{key}", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.blocked[r.PathValue("key")]++
		first := a.blocked[r.PathValue("key")] == 1
		a.mu.Unlock()
		if first {
			select {
			case <-r.Context().Done(): // the worker died or cancelled the step
				a.mu.Lock()
				a.aborted[r.PathValue("key")] = time.Now()
				a.mu.Unlock()
				return
			case <-time.After(2 * time.Minute):
			}
		}
		w.Write([]byte(`{}`))
	})
	mux.HandleFunc("GET /sleep/{key}", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(1500 * time.Millisecond):
		}
		w.Write([]byte(`{}`))
	})
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>Orders</title><h1>Orders</h1><p>A1001 paid</p>`))
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

func (a *scaleAPI) hits(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count[key]
}

func (a *scaleAPI) blocks(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.blocked[key]
}

func (a *scaleAPI) isBlocked(key string) bool { return a.blocks(key) > 0 }

// abortedAt returns when the client of the first /block/key request went
// away (zero if it has not).
func (a *scaleAPI) abortedAt(key string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.aborted[key]
}
