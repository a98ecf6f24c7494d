package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/sqlite"
)

type auditLog struct {
	mu   sync.Mutex
	recs []*duet.AuditRecord
}

func (a *auditLog) Record(r *duet.AuditRecord) {
	a.mu.Lock()
	a.recs = append(a.recs, r)
	a.mu.Unlock()
}

func (a *auditLog) all() []*duet.AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*duet.AuditRecord(nil), a.recs...)
}

const suite = `
task: {name: shop, description: the shop, baseURL: "http://127.0.0.1:1", sharedWith: [bob]}
cases:
  - {key: a, title: first, steps: [{assert: "true"}]}
  - {key: b, title: second, steps: [{assert: "1 == 1"}]}
`

func setup(t *testing.T, opts catalog.Options) (*catalog.Catalog, *sqlite.DB, *duet.Task, *auditLog) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(t.Context(), []byte(suite), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	log := &auditLog{}
	opts.Auditor = log
	return catalog.New(db, opts), db, res.Task, log
}

func call(t *testing.T, c *catalog.Catalog, user, tool string, args any) *catalog.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceMCP}, Tool: tool, Args: b})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	// Every result, success or failure, matches the tool's output schema.
	tl, _ := c.Tool(tool)
	rs, err := tl.OutputSchema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(res.Structured, &v)
	if err := rs.Validate(v); err != nil {
		t.Fatalf("%s: structuredContent does not match the output schema: %v\n%s", tool, err, res.Structured)
	}
	if res.Text == "" {
		t.Fatalf("%s: empty text", tool)
	}
	return res
}

func decode[T any](t *testing.T, r *catalog.Result) T {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Text)
	}
	var v T
	if err := json.Unmarshal(r.Structured, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestToolsFlow(t *testing.T) {
	t.Parallel()
	var created []string
	c, _, task, log := setup(t, catalog.Options{RunCreated: func(id string) { created = append(created, id) }})
	list := decode[catalog.ListTasksOut](t, call(t, c, "alice", catalog.ToolListTasks, map[string]any{}))
	if list.Total != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("alice's tasks: %+v", list)
	}
	if shared := decode[catalog.ListTasksOut](t, call(t, c, "bob", catalog.ToolListTasks, map[string]any{})); shared.Total != 1 {
		t.Fatalf("bob sees the shared task: got %d", shared.Total)
	}
	if none := decode[catalog.ListTasksOut](t, call(t, c, "carol", catalog.ToolListTasks, map[string]any{})); none.Total != 0 || len(none.Tasks) != 0 {
		t.Fatalf("carol: got %+v", none)
	}
	got := decode[catalog.GetTaskOut](t, call(t, c, "alice", catalog.ToolGetTask, map[string]any{"taskId": task.ID}))
	if got.CaseCount != 2 || got.LastRun != nil {
		t.Fatalf("get task: %+v", got)
	}
	cases := decode[catalog.ListCasesOut](t, call(t, c, "alice", catalog.ToolListCases, map[string]any{"taskId": task.ID}))
	if cases.Total != 2 {
		t.Fatalf("cases: %+v", cases)
	}
	cs := decode[catalog.GetCaseOut](t, call(t, c, "bob", catalog.ToolGetCase, map[string]any{"caseId": cases.Cases[0].ID}))
	if cs.Case.Source == "" || len(cs.Case.Steps) != 1 {
		t.Fatalf("case: %+v", cs)
	}
	start := decode[catalog.StartRunOut](t, call(t, c, "alice", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k1"}))
	if start.RunID == "" || start.CaseCount != 2 || start.Replayed || len(created) != 1 {
		t.Fatalf("start: %+v %v", start, created)
	}
	again := decode[catalog.StartRunOut](t, call(t, c, "alice", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k1"}))
	if again.RunID != start.RunID || !again.Replayed || len(created) != 1 {
		t.Fatalf("replay: %+v", again)
	}
	conflict := call(t, c, "alice", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k1", "caseIds": []string{cases.Cases[0].ID}})
	if !conflict.IsError || conflict.Code != duet.CodeIdempotencyConflict {
		t.Fatalf("conflict: %+v", conflict)
	}
	run := decode[catalog.GetRunOut](t, call(t, c, "alice", catalog.ToolGetRun, map[string]any{"runId": start.RunID}))
	if run.Run.Status != duet.StatusQueued || run.Run.Done || len(run.Executions) != 2 {
		t.Fatalf("run: %+v", run)
	}
	x := decode[catalog.GetExecutionOut](t, call(t, c, "alice", catalog.ToolGetExecutionResult, map[string]any{"executionId": run.Executions[0].ID}))
	if x.Execution.Status != duet.StatusPending {
		t.Fatalf("execution: %+v", x)
	}
	one := decode[catalog.StartRunOut](t, call(t, c, "bob", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k1", "caseIds": []string{cases.Cases[1].ID}}))
	if one.CaseCount != 1 || one.RunID == start.RunID {
		t.Fatalf("bob's run (keys are per caller): %+v", one)
	}
	recs := log.all()
	if len(recs) != 12 {
		t.Fatalf("audit records: got %d, want 12", len(recs))
	}
	for _, r := range recs {
		if r.Caller == "" || r.TraceID == "" || r.Tool == "" || r.Outcome == "" || r.CallSource != duet.SourceMCP {
			t.Fatalf("incomplete audit record %+v", r)
		}
	}
}

func TestNotFoundIsIndistinguishable(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{})
	other, err := db.ApplySuite(t.Context(), "mallory", &duet.Suite{Task: duet.Task{Name: "secret"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{catalog.ToolGetTask, catalog.ToolListCases} {
		hidden := call(t, c, "carol", tool, map[string]any{"taskId": task.ID})
		missing := call(t, c, "carol", tool, map[string]any{"taskId": other.Task.ID[:5] + strings.Repeat("z", len(other.Task.ID)-5)})
		mine := call(t, c, "alice", tool, map[string]any{"taskId": other.Task.ID})
		for _, r := range []*catalog.Result{hidden, missing, mine} {
			if !r.IsError || r.Code != duet.CodeNotFound {
				t.Fatalf("%s: got %+v, want NOT_FOUND", tool, r)
			}
		}
		norm := func(r *catalog.Result) string {
			return strings.NewReplacer(task.ID, "ID", other.Task.ID, "ID", other.Task.ID[:5]+strings.Repeat("z", len(other.Task.ID)-5), "ID").Replace(r.Text)
		}
		if norm(hidden) != norm(missing) || norm(mine) != norm(missing) {
			t.Fatalf("%s: messages differ: %q / %q / %q", tool, hidden.Text, missing.Text, mine.Text)
		}
	}
	r := call(t, c, "carol", catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "x"})
	if r.Code != duet.CodeNotFound {
		t.Fatalf("start on a hidden task: %+v", r)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	c, _, task, log := setup(t, catalog.Options{Limits: catalog.Limits{MaxArgBytes: 1 << 20}})
	if _, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice"}, Tool: "drop_database"}); err == nil {
		t.Fatal("unknown tool: got nil error")
	}
	tests := []struct {
		name string
		tool string
		args string
		want duet.Code
	}{
		{"wrong type", catalog.ToolGetTask, `{"taskId": 42}`, duet.CodeInvalidArgument},
		{"missing required", catalog.ToolStartRun, fmt.Sprintf(`{"taskId": %q}`, task.ID), duet.CodeInvalidArgument},
		{"empty key", catalog.ToolStartRun, fmt.Sprintf(`{"taskId": %q, "idempotencyKey": ""}`, task.ID), duet.CodeInvalidArgument},
		{"unknown field", catalog.ToolGetTask, `{"taskId": "x", "sql": "drop"}`, duet.CodeInvalidArgument},
		{"not an object", catalog.ToolGetTask, `[1,2]`, duet.CodeInvalidArgument},
		{"not json", catalog.ToolGetTask, `{taskId`, duet.CodeInvalidArgument},
		{"limit too big", catalog.ToolListTasks, `{"limit": 1000}`, duet.CodeInvalidArgument},
		{"too large", catalog.ToolGetTask, `{"taskId": "` + strings.Repeat("x", 2<<20) + `"}`, duet.CodeTooLarge},
		{"bad cursor", catalog.ToolListTasks, `{"cursor": "@@@"}`, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		res, err := c.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: "alice"}, Tool: tt.tool, Args: json.RawMessage(tt.args)})
		if err != nil || !res.IsError || res.Code != tt.want {
			t.Errorf("%s: got %+v %v, want %s", tt.name, res, err, tt.want)
		}
	}
	res, _ := c.Call(t.Context(), catalog.Request{Tool: catalog.ToolListTasks})
	if res.Code != duet.CodeUnauthenticated {
		t.Errorf("no identity: got %+v", res)
	}
	if n := len(log.all()); n != len(tests)+2 {
		t.Errorf("audit records: got %d, want %d (refused calls are audited too)", n, len(tests)+2)
	}
}

type slowStore struct {
	duet.Store
	block   chan struct{}
	entered chan struct{}
}

func (s slowStore) FindTasks(ctx context.Context, f duet.TaskFilter) ([]*duet.Task, string, int, error) {
	s.entered <- struct{}{}
	select {
	case <-s.block:
	case <-ctx.Done():
		return nil, "", 0, ctx.Err()
	}
	return s.Store.FindTasks(ctx, f)
}

func TestLimitsAndTimeout(t *testing.T) {
	t.Parallel()
	_, db, _, _ := setup(t, catalog.Options{})
	slow := slowStore{db, make(chan struct{}), make(chan struct{}, 10)}
	log := &auditLog{}
	// The timeout is what ends the three blocked calls; the probes that must
	// succeed within it get two seconds, room for a loaded machine.
	c := catalog.New(slow, catalog.Options{Auditor: log, Limits: catalog.Limits{MaxConcurrent: 3, MaxPerCaller: 2, Timeout: 2 * time.Second}})
	var wg sync.WaitGroup
	results := make(chan *catalog.Result, 10)
	for _, u := range []string{"u1", "u1", "u2"} {
		wg.Go(func() {
			r, _ := c.Call(context.Background(), catalog.Request{Caller: duet.Caller{UserID: u}, Tool: catalog.ToolListTasks})
			results <- r
		})
	}
	for range 3 {
		<-slow.entered // the three calls hold their slots
	}
	probe := func(c *catalog.Catalog, user string) *catalog.Result {
		// A case: a task reference that no id names is looked up by name
		// too (catalog.FindTask), which is the slow store's FindTasks.
		r, _ := c.Call(context.Background(), catalog.Request{Caller: duet.Caller{UserID: user}, Tool: catalog.ToolGetCase, Args: json.RawMessage(`{"caseId":"x"}`)})
		return r
	}
	if r := probe(c, "u3"); r.Code != duet.CodeRateLimited || !strings.Contains(r.Text, "concurrent calls") {
		t.Fatalf("over the global cap: got %+v", r)
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.Code != duet.CodeTimeout {
			t.Fatalf("blocked call: got %+v, want TIMEOUT", r)
		}
	}
	if r := probe(c, "u3"); r.Code != duet.CodeNotFound {
		t.Fatalf("after the calls ended, slots are free again: got %+v", r)
	}
	// Per-caller cap.
	c2 := catalog.New(slow, catalog.Options{Limits: catalog.Limits{MaxPerCaller: 1, Timeout: time.Minute}})
	go c2.Call(context.Background(), catalog.Request{Caller: duet.Caller{UserID: "u1"}, Tool: catalog.ToolListTasks})
	<-slow.entered
	defer close(slow.block) // ends the blocked call
	if r := probe(c2, "u1"); r.Code != duet.CodeRateLimited || !strings.Contains(r.Text, "per-caller") {
		t.Fatalf("over the per-caller cap: got %+v", r)
	}
	if r := probe(c2, "u2"); r.Code != duet.CodeNotFound {
		t.Fatalf("another caller is not limited: got %+v", r)
	}
	var timeouts, limited int
	for _, r := range log.all() {
		switch r.Outcome {
		case duet.CodeTimeout:
			timeouts++
		case duet.CodeRateLimited:
			limited++
		}
	}
	if timeouts != 3 || limited != 1 {
		t.Fatalf("audited: %d timeouts, %d rate-limited; want 3 and 1", timeouts, limited)
	}
}
func TestSchemas(t *testing.T) {
	t.Parallel()
	c, _, _, _ := setup(t, catalog.Options{})
	names := map[string]bool{}
	for _, tl := range c.Tools() {
		names[tl.Name] = true
		if tl.Description == "" || tl.InputSchema.Type != "object" || tl.OutputSchema.Type != "object" {
			t.Errorf("%s: incomplete tool", tl.Name)
		}
		if _, err := tl.OutputSchema.Resolve(&jsonschema.ResolveOptions{}); err != nil {
			t.Errorf("%s: output schema: %v", tl.Name, err)
		}
	}
	for _, want := range []string{"list_test_tasks", "get_test_task", "list_test_cases", "get_test_case", "get_test_run", "get_execution_result", "start_test_run", "stop_test_run"} {
		if !names[want] {
			t.Errorf("missing tool %s", want)
		}
	}
	if len(names) != 8 {
		t.Errorf("catalog has %d tools, want exactly 8 (no pass-through tools)", len(names))
	}
}
