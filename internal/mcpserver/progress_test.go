package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
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
