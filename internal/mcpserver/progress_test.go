package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestStartRunProgress: start_test_run with a progress token keeps the
// request open over stateless HTTP (answered as an event stream), streams
// progress notifications while a worker executes the run, and answers with
// the finished run; without a token the answer is immediate.
func TestStartRunProgress(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, _ := compiler.CompileSuite(t.Context(), []byte(`task: {name: shop}
cases:
  - {key: a, title: first, steps: [{set: {x: "1"}}, {assert: "x == 1"}]}
  - {key: b, title: second, steps: [{assert: "true"}]}
`), "", compiler.Options{})
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(db, engine.Options{})

	// The client's progress handler records each notification and says
	// when the run was seen queued and when its final state arrived: the
	// test waits for those events, never for a time.
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	seenQueued := map[string]chan struct{}{} // run id → closed once a notification shows it queued
	seen := func(runID string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if seenQueued[runID] == nil {
			seenQueued[runID] = make(chan struct{})
		}
		return seenQueued[runID]
	}
	ended := make(chan struct{}) // closed once a notification reports the run final
	finalNote := regexp.MustCompile(`^run \S+ (passed|failed|error|cancelled):`)
	var endOnce sync.Once

	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	work := func(runID string) {
		queued := seen(runID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The caller sees the run queued first: the worker starts it
			// only after the client got that notification. A run started
			// without a progress token stays queued (nobody follows it).
			select {
			case <-queued:
			case <-t.Context().Done():
				return
			}
			claimed, err := db.ClaimRunByID(t.Context(), runID, "test-worker", time.Minute)
			if err != nil || claimed == nil {
				t.Errorf("claim: %v", err)
				return
			}
			if err := eng.Execute(t.Context(), duet.LeaseOf(claimed, "test-worker"), claimed, nil); err != nil {
				t.Errorf("execute: %v", err)
			}
		}()
	}
	srvr := mcpserver.New(catalog.New(db, catalog.Options{RunCreated: work}), mcpserver.Options{Version: "test"})
	hs := httptest.NewServer(asUser(srvr.HTTPHandler(mcpserver.HTTPOptions{})))
	t.Cleanup(hs.Close)

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			notes = append(notes, r.Params)
			mu.Unlock()
			if f := strings.Fields(r.Params.Message); len(f) > 2 && f[0] == "run" && f[2] == "queued:" {
				ch := seen(f[1])
				mu.Lock()
				select {
				case <-ch:
				default:
					close(ch)
				}
				mu.Unlock()
			}
			if finalNote.MatchString(r.Params.Message) {
				endOnce.Do(func() { close(ended) })
			}
		},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: headerRT{"alice"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// Without a progress token: the runId at once, the run still queued.
	quick, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: catalog.ToolStartRun,
		Arguments: map[string]any{"taskId": res.Task.ID, "idempotencyKey": "k-quick"}})
	if err != nil || quick.IsError {
		t.Fatalf("start_test_run: %v %+v", err, quick)
	}
	var q catalog.StartRunOut
	b, _ := json.Marshal(quick.StructuredContent)
	json.Unmarshal(b, &q)
	if q.Status != duet.StatusQueued || q.Result != nil {
		t.Errorf("without a progress token: got status %s result %v, want queued and no result", q.Status, q.Result)
	}

	p := &mcp.CallToolParams{Name: catalog.ToolStartRun, Arguments: map[string]any{"taskId": res.Task.ID, "idempotencyKey": "k-progress"}}
	p.SetProgressToken("tok-1")
	out, err := cs.CallTool(t.Context(), p)
	if err != nil || out.IsError {
		t.Fatalf("start_test_run with progress: %v %+v", err, out)
	}
	var got catalog.StartRunOut
	b, _ = json.Marshal(out.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != duet.StatusPassed || got.Result == nil || got.Result.Run.Status != duet.StatusPassed || len(got.Result.Executions) != 2 {
		t.Fatalf("result: got %s", b)
	}
	if text := out.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "passed") {
		t.Errorf("text: got %q", text)
	}
	// The client may hand notifications to the handler after the reply:
	// wait for the one that reports the run final (the server's last).
	// (A minute is a budget a loaded machine meets, not a timing claim;
	// past it the checks below say what is missing.)
	select {
	case <-ended:
	case <-time.After(time.Minute):
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) < 2 {
		t.Fatalf("progress notifications: got %d, want the queued state and the end at least", len(notes))
	}
	first, last := notes[0], notes[len(notes)-1]
	if first.ProgressToken != "tok-1" || first.Total != 2 || first.Progress != 0 || !strings.Contains(first.Message, "queued: 0 of 2 cases done") {
		t.Errorf("first notification: got %+v", first)
	}
	if last.Progress != 2 || last.Total != 2 || !strings.Contains(last.Message, "passed: 2 of 2 cases done") {
		t.Errorf("last notification: got %+v", last)
	}
}

// TestStartRunProgressDuringALongStep: while a step runs long (an http step
// whose server answers only when the test lets it), a streaming
// start_test_run keeps sending progress — the step running, for how long —
// at least every Limits.ProgressInterval (short here), each with a higher
// progress value, so that a client whose request timeout restarts on
// progress keeps waiting for the healthy run. The test counts the
// notifications that arrive while the step is held, and lets it go only
// after several arrived and one said how long the step had run.
func TestStartRunProgressDuringALongStep(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	var startOnce sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		startOnce.Do(func() { close(started) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(t.Context(), []byte(`task: {name: slow}
cases:
  - key: a
    title: waits on a slow server
    steps:
      - http: {url: "`+slow.URL+`/slow", saveAs: r}
        name: slow call
        timeout: 5m
      - assert: r.status == 200
`), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(db, engine.Options{})
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	work := func(runID string) {
		wg.Go(func() {
			claimed, err := db.ClaimRunByID(t.Context(), runID, "test-worker", time.Minute)
			if err != nil || claimed == nil {
				t.Errorf("claim: %v", err)
				return
			}
			if err := eng.Execute(t.Context(), duet.LeaseOf(claimed, "test-worker"), claimed, nil); err != nil {
				t.Errorf("execute: %v", err)
			}
		})
	}
	limits := catalog.Limits{ProgressInterval: 20 * time.Millisecond}
	srvr := mcpserver.New(catalog.New(db, catalog.Options{RunCreated: work, Limits: limits}), mcpserver.Options{Version: "test"})
	hs := httptest.NewServer(asUser(srvr.HTTPHandler(mcpserver.HTTPOptions{})))
	t.Cleanup(hs.Close)

	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	duringStep := 0      // notifications naming the held step as running, once it started
	toldElapsed := false // one said for how long the step had run
	enough := make(chan struct{})
	var enoughOnce sync.Once
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, r.Params)
			select {
			case <-release:
				return // the step may have ended
			default:
			}
			select {
			case <-started:
			default:
				return
			}
			if strings.Contains(r.Params.Message, `step 1/2 slow call`) {
				duringStep++
				toldElapsed = toldElapsed || strings.Contains(r.Params.Message, "step 1/2 slow call, running for ")
			}
			if duringStep >= 4 && toldElapsed {
				enoughOnce.Do(func() { close(enough) })
			}
		},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: headerRT{"alice"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	go func() {
		// The step is held until enough notifications arrived while it
		// ran (a minute is a budget a loaded machine meets; past it the
		// step is let go and the checks below say what was missing).
		select {
		case <-enough:
		case <-time.After(time.Minute):
		case <-t.Context().Done():
		}
		mu.Lock()
		select {
		case <-release:
		default:
			close(release)
		}
		mu.Unlock()
	}()
	p := &mcp.CallToolParams{Name: catalog.ToolStartRun, Arguments: map[string]any{"taskId": res.Task.ID, "idempotencyKey": "k-slow"}}
	p.SetProgressToken("tok-slow")
	out, err := cs.CallTool(t.Context(), p)
	if err != nil || out.IsError {
		t.Fatalf("start_test_run with progress: %v %+v", err, out)
	}
	var got catalog.StartRunOut
	b, _ := json.Marshal(out.StructuredContent)
	mu.Lock()
	defer mu.Unlock()
	select {
	case <-enough:
	default:
		t.Fatalf("while the step ran: %d notifications naming it (elapsed told: %v), want at least 4, one of them with the time it ran; all: %s",
			duringStep, toldElapsed, messages(notes))
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Status != duet.StatusPassed {
		t.Fatalf("result: %s %v", b, err)
	}
	for i := 1; i < len(notes); i++ {
		if notes[i].Progress < notes[i-1].Progress {
			t.Errorf("progress went back from %v to %v: %s", notes[i-1].Progress, notes[i].Progress, messages(notes))
		}
		if strings.Contains(notes[i].Message, "step 1/2 slow call") && strings.Contains(notes[i-1].Message, "step 1/2 slow call") &&
			notes[i].Progress <= notes[i-1].Progress {
			t.Errorf("a heartbeat of the running step did not raise progress (%v after %v)", notes[i].Progress, notes[i-1].Progress)
		}
		if notes[i].Progress >= 1 && strings.Contains(notes[i].Message, "running case") {
			t.Errorf("progress %v while the only case runs: %q", notes[i].Progress, notes[i].Message)
		}
	}
}

func messages(notes []*mcp.ProgressNotificationParams) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString("\n  " + strconv.FormatFloat(n.Progress, 'g', 6, 64) + " " + n.Message)
	}
	return b.String()
}
