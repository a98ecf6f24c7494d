package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	core "github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// stepLog is a system under test that records when each step's request
// arrived: /s/RUN/CASE/STEP answers after a short while, as real steps do.
type stepLog struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string][]stepHit // run → its hits in arrival order
}

type stepHit struct {
	at   time.Time
	cas  string
	step int
}

func newStepLog(t *testing.T) *stepLog {
	s := &stepLog{hits: map[string][]stepHit{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /s/{run}/{case}/{step}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("step"))
		s.mu.Lock()
		s.hits[r.PathValue("run")] = append(s.hits[r.PathValue("run")], stepHit{at: time.Now(), cas: r.PathValue("case"), step: n})
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-time.After(300 * time.Millisecond):
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *stepLog) of(run string) []stepHit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits[run])
}

// since counts the steps that arrived after t.
func (s *stepLog) since(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, hs := range s.hits {
		for _, h := range hs {
			if h.at.After(t) {
				n++
			}
		}
	}
	return n
}

// TestPostgresOutageLongerThanTheWriteWait stops the database under `duet
// worker` processes running runs, for longer than a run's writes wait for
// it (30 s) and than the lease (30 s, the default), then starts it again.
// It checks what the review found broken: no run ends "passed" with a step
// result or a case missing, no step reaches the system under test while
// the database is away (a worker that cannot record a result does not go
// on), no step of a run is run by two workers at once (a worker that lost
// its lease cannot write and stops), and every run ends passed once the
// database is back, its interrupted cases run again from their start. The
// figures it logs are in docs/deployment.md.
func TestPostgresOutageLongerThanTheWriteWait(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	sys := newStepLog(t)
	var keyBytes [32]byte
	rand.Read(keyBytes[:])
	common := []string{
		"DUET_DATABASE_URL=" + cluster.URL,
		"DUET_ARTIFACT_DIR=" + filepath.Join(t.TempDir(), "artifacts"),
		"DUET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(keyBytes[:]),
		"DUET_GATEWAY_API_KEYS=" + gatewayKey,
		"DUET_DATABASE_CONNECT_TIMEOUT=1s",
	}
	store, err := postgres.Open(t.Context(), cluster.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	const cases, steps = 4, 4
	var src strings.Builder
	fmt.Fprintf(&src, "task: {name: outage, baseURL: %q}\ncases:\n", sys.URL)
	for c := range cases {
		fmt.Fprintf(&src, "  - key: c%d\n    title: case %d\n    steps:\n", c, c)
		for s := range steps {
			fmt.Fprintf(&src, "      - http: {url: \"/s/${run.id}/c%d/%d\", saveAs: r%d}\n", c, s, s)
		}
	}
	applySuite(t, common, "alice", src.String())
	task, err := store.FindTaskByName(t.Context(), "alice", "outage")
	if err != nil {
		t.Fatal(err)
	}
	serve := startScaleProc(t, "serve", append([]string{"DUET_WORKERS=0"}, common...))
	workerEnv := append([]string{"DUET_WORKERS=3", "DUET_PARALLEL=2"}, common...)
	workers := []*scaleProc{startScaleProc(t, "worker", workerEnv), startScaleProc(t, "worker", workerEnv)}

	const runs = 6
	var ids []string
	for i := range runs {
		o := mcpTool(serve.URL, "alice", "start_test_run", map[string]any{"taskId": task.ID, "idempotencyKey": fmt.Sprintf("outage-%d", i)})
		if o.Err != nil || o.Code != "" {
			t.Fatalf("start %d: %+v", i, o)
		}
		ids = append(ids, o.Out["runId"].(string))
	}
	// Every run under way, its cases mid-way, when the database stops.
	waitUntil(t, 60*time.Second, "every run to be under way", func() bool {
		for _, id := range ids {
			if len(sys.of(id)) < 2 {
				return false
			}
		}
		return true
	})
	// The database is away once Stop returns (pg_ctl -w). While it stops,
	// it still commits: a step whose previous result was recorded then is
	// sent then, rightly. Steps are counted from when it is surely away.
	cluster.Stop()
	stopped := time.Now()
	const outage = 45 * time.Second // > the 30 s write wait, > the 30 s lease
	time.Sleep(outage)
	during := sys.since(stopped)
	cluster.Start()
	restarted := time.Now()
	final := waitRunsFinal(t, store, ids, 3*time.Minute)
	recovered := time.Since(restarted)

	inFlight, rerun, lost, handedBack := 0, 0, 0, 0
	for _, w := range workers {
		handedBack += strings.Count(w.Log(), "run given back to the queue")
	}
	for i, r := range final {
		execs, err := store.FindExecutions(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		// A verdict over every result, never over a case or a result
		// that was not written.
		if r.Status != core.StatusPassed {
			t.Errorf("run %d: %s (%s) after the outage, want passed once the database is back", i, r.Status, r.ErrorMessage)
		}
		for _, x := range execs {
			if !x.Status.Final() || x.Status != core.StatusPassed && r.Status == core.StatusPassed || len(x.Results) != len(x.Steps) {
				t.Errorf("run %d (%s): case %s %s with %d of %d step results", i, r.Status, x.CaseKey, x.Status, len(x.Results), len(x.Steps))
			}
		}
		if r.Lost > 0 {
			lost++
		}
		// The steps each case sent, in arrival order: runs of consecutive
		// steps, the last one whole; an earlier, interrupted one ended
		// before the database stopped — never two workers at once.
		byCase := map[string][]stepHit{}
		for _, h := range sys.of(r.ID) {
			byCase[h.cas] = append(byCase[h.cas], h)
		}
		interrupted := false
		for c, hits := range byCase {
			var segs [][]stepHit
			for j, h := range hits {
				if j == 0 || h.step != hits[j-1].step+1 {
					segs = append(segs, nil)
				}
				segs[len(segs)-1] = append(segs[len(segs)-1], h)
			}
			last := segs[len(segs)-1]
			if last[0].step != 0 || len(last) != steps {
				t.Errorf("run %d case %s: its last attempt sent steps %v, want 0 to %d", i, c, stepsOf(last), steps-1)
			}
			for _, seg := range segs[:len(segs)-1] {
				interrupted = true
				rerun += len(seg)
				if seg[0].step != 0 || seg[len(seg)-1].at.After(stopped) {
					t.Errorf("run %d case %s: an interrupted attempt sent steps %v, the last at %s (the database stopped at %s): a step ran twice or at once with another worker",
						i, c, stepsOf(seg), seg[len(seg)-1].at.Format("15:04:05.000"), stopped.Format("15:04:05.000"))
				}
			}
			if len(segs) > 2 {
				t.Errorf("run %d case %s: %d attempts, want at most 2 (one outage)", i, c, len(segs))
			}
		}
		if interrupted {
			inFlight++
		}
	}
	if during != 0 {
		t.Errorf("%d steps reached the system under test while the database was away: a worker went on without recording results", during)
	}
	t.Logf("database stopped %s (longer than the 30 s write wait and lease) under %d runs of %d cases × %d steps on 2 workers: "+
		"%d steps sent while it was away, %d runs had a case interrupted (%d steps sent again, from the case's start), %d runs given back by their worker, %d taken over as lost; "+
		"every run passed with every result %s after the restart",
		outage, runs, cases, steps, during, inFlight, rerun, handedBack, lost, recovered.Round(100*time.Millisecond))
}

func stepsOf(hits []stepHit) []int {
	var out []int
	for _, h := range hits {
		out = append(out, h.step)
	}
	return out
}

// TestKillNineKeepsTheAuditOfAnsweredWrites hammers a `duet serve` with
// writes (start_test_run) and reads (get_test_task) from several clients,
// kills it with SIGKILL while calls are in flight, and checks the audit
// trail: every write answered OK has its record — stored with the change,
// in the same transaction — and the records of reads, which are batched,
// lose at most the last flush interval. The figures are in
// docs/governance.md (Audit).
func TestKillNineKeepsTheAuditOfAnsweredWrites(t *testing.T) {
	t.Parallel()
	cluster := pgtest.StartCluster(t)
	var keyBytes [32]byte
	rand.Read(keyBytes[:])
	common := []string{
		"DUET_DATABASE_URL=" + cluster.URL,
		"DUET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(keyBytes[:]),
		"DUET_GATEWAY_API_KEYS=" + gatewayKey,
		"DUET_MAX_PER_CALLER=256", "DUET_MAX_CONCURRENT=512", "DUET_MAX_QUEUED_RUNS=100000",
	}
	store, err := postgres.Open(t.Context(), cluster.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	applySuite(t, common, "u1", "task: {name: audited, baseURL: \"http://127.0.0.1:9\"}\ncases:\n  - key: a\n    title: a\n    steps: [{assert: \"true\"}]\n")
	task, err := store.FindTaskByName(t.Context(), "u1", "audited")
	if err != nil {
		t.Fatal(err)
	}
	serve := startScaleProc(t, "serve", append([]string{"DUET_WORKERS=0"}, common...))

	var mu sync.Mutex
	var writes, reads []string // trace ids of the calls answered OK
	answered := map[string]time.Time{}
	var n atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	began := time.Now()
	for g := range 8 {
		wg.Go(func() {
			for !stop.Load() {
				trace := newTraceID()
				write := g%2 == 0
				var o toolOutcome
				if write {
					o = mcpToolTraced(serve.URL, "u1", trace, "start_test_run", map[string]any{"taskId": task.ID, "idempotencyKey": trace})
				} else {
					o = mcpToolTraced(serve.URL, "u1", trace, "get_test_task", map[string]any{"taskId": task.ID})
				}
				if o.Err != nil || o.Code != "" {
					continue // not answered OK (the kill)
				}
				mu.Lock()
				if write {
					writes = append(writes, trace)
				} else {
					reads = append(reads, trace)
				}
				answered[trace] = time.Now()
				mu.Unlock()
				n.Add(1)
			}
		})
	}
	waitUntil(t, 60*time.Second, "400 calls answered", func() bool { return n.Load() >= 400 })
	killed := time.Now()
	if err := serve.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-serve.done
	stop.Store(true)
	wg.Wait()

	recorded := map[string]bool{}
	recs, err := store.FindAudit(t.Context(), core.AuditFilter{Caller: "u1", Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		recorded[r.TraceID] = true
	}
	missingWrites := 0
	for _, tr := range writes {
		if !recorded[tr] {
			missingWrites++
		}
	}
	missingReads := 0
	var window time.Duration // how long before the kill the oldest lost one was answered
	for _, tr := range reads {
		if !recorded[tr] {
			missingReads++
			window = max(window, killed.Sub(answered[tr]))
		}
	}
	if missingWrites > 0 {
		t.Errorf("kill -9: %d of %d writes answered OK have no audit record", missingWrites, len(writes))
	}
	// Every answered start is a run in the database, with its record.
	runs, _, err := store.FindRuns(t.Context(), core.RunFilter{TaskID: task.ID, Limit: 100})
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %d %v", len(runs), err)
	}
	t.Logf("kill -9 of duet serve %s after the first call, under 8 clients: %d writes answered OK, %d without an audit record; %d reads answered OK, %d without one, all answered in the last %s before the kill (batched)",
		killed.Sub(began).Round(100*time.Millisecond), len(writes), missingWrites, len(reads), missingReads, window.Round(time.Millisecond))
}

func newTraceID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// mcpToolTraced is mcpTool with a W3C traceparent naming the call's trace
// id, which its audit record carries.
func mcpToolTraced(url, user, trace, tool string, args map[string]any) toolOutcome {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	req, _ := http.NewRequest("POST", url+"/mcp/http", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("SSO-Emp-Id", user)
	req.Header.Set("Traceparent", "00-"+trace+"-0123456789abcdef-01")
	res, err := scaleClient.Do(req)
	if err != nil {
		return toolOutcome{Err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return toolOutcome{Err: err}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(b)) {
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				b = []byte(d)
			}
		}
	}
	if res.StatusCode != http.StatusOK {
		return toolOutcome{Err: fmt.Errorf("HTTP %d: %s", res.StatusCode, b)}
	}
	var resp struct {
		Result *struct {
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return toolOutcome{Err: err}
	}
	if resp.Result == nil {
		return toolOutcome{Err: fmt.Errorf("JSON-RPC error %v", resp.Error)}
	}
	o := toolOutcome{Out: resp.Result.StructuredContent}
	if resp.Result.IsError {
		o.Code = "(error)"
	}
	return o
}
