package catalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestEveryArgumentIsBounded: every string argument of every tool has a
// maxLength and every array a maxItems (with bounded items), so that no
// argument reaches a tool, a query or a log unbounded.
func TestEveryArgumentIsBounded(t *testing.T) {
	t.Parallel()
	c, _, _, _ := setup(t, catalog.Options{})
	has := func(s *jsonschema.Schema, typ string) bool {
		if s.Type == typ {
			return true
		}
		for _, x := range s.Types {
			if x == typ {
				return true
			}
		}
		return false
	}
	for _, tl := range c.Tools() {
		for name, p := range tl.InputSchema.Properties {
			switch {
			case has(p, "string") && p.MaxLength == nil:
				t.Errorf("%s: string argument %s has no maxLength", tl.Name, name)
			case has(p, "array") && (p.MaxItems == nil || p.Items == nil || has(p.Items, "string") && p.Items.MaxLength == nil):
				t.Errorf("%s: array argument %s has no maxItems or unbounded items", tl.Name, name)
			}
		}
	}
}

// TestOversizedArgumentsAreInvalid: arguments beyond their bounds — a query
// of 50,000 characters among them, which used to reach SQLite and come back
// INTERNAL with an ERROR log each time — are INVALID_ARGUMENT, and nothing is
// logged as an error.
func TestOversizedArgumentsAreInvalid(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	c, _, task, _ := setup(t, catalog.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	long := strings.Repeat("a", 50_000)
	tests := []struct {
		tool string
		args map[string]any
	}{
		{catalog.ToolListTasks, map[string]any{"query": long}},
		{catalog.ToolListTasks, map[string]any{"query": strings.Repeat("%_", 150)}},
		{catalog.ToolListTasks, map[string]any{"owner": long}},
		{catalog.ToolListTasks, map[string]any{"cursor": long}},
		{catalog.ToolGetTask, map[string]any{"taskId": long}},
		{catalog.ToolListCases, map[string]any{"taskId": task.ID, "cursor": long}},
		{catalog.ToolGetRun, map[string]any{"runId": long}},
		{catalog.ToolGetExecutionResult, map[string]any{"executionId": long}},
		{catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k", "device": long}},
		{catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k", "caseIds": []string{long}}},
		{catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": "k", "caseIds": make([]string, 1001)}},
	}
	for _, tt := range tests {
		r := call(t, c, "alice", tt.tool, tt.args)
		if !r.IsError || r.Code != duet.CodeInvalidArgument {
			t.Errorf("%s with %.60v: got %s %.200s, want INVALID_ARGUMENT", tt.tool, tt.args, r.Code, r.Text)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("bad input was logged as an error:\n%s", logs.String())
	}
	// Within bounds, a query with LIKE's special characters is an ordinary
	// search.
	r := decode[catalog.ListTasksOut](t, call(t, c, "alice", catalog.ToolListTasks, map[string]any{"query": strings.Repeat("%_", 100)}))
	if r.Total != 0 {
		t.Errorf("a query of %%_ matched %d tasks", r.Total)
	}
}

// bigRun stores a run of n executions of task's first case, as alice, with
// the first execution finished (a failed step, an output, variables).
func bigRun(t testing.TB, c *catalog.Catalog, db interface {
	duet.Store
}, task *duet.Task, n int) (*duet.Run, []*duet.Execution) {
	t.Helper()
	cases, _, _, err := db.FindCases(t.Context(), duet.CaseFilter{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	cs := cases[0]
	run := &duet.Run{TaskID: task.ID, TriggeredBy: "alice", CallSource: duet.SourceMCP}
	execs := make([]*duet.Execution, n)
	for i := range execs {
		execs[i] = &duet.Execution{CaseID: cs.ID, CaseKey: fmt.Sprintf("%s-%05d", cs.Key, i), CaseTitle: fmt.Sprintf("a case with a fairly ordinary title, number %d", i), CaseVersion: 1, Steps: cs.Steps}
	}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	claimed, err := db.ClaimRunByID(t.Context(), run.ID, "w", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	l := duet.LeaseOf(claimed, "w")
	x := execs[0]
	now := time.Now()
	x.StartedAt = &now
	if err := db.StartExecution(t.Context(), l, x); err != nil {
		t.Fatal(err)
	}
	res := &duet.StepResult{Index: 0, Kind: duet.StepMCPCall, Name: "query_order", Status: duet.StatusFailed, SavedAs: "order",
		Output: json.RawMessage(`{"structuredContent":{"owner":"alice's customer","card":"4111-xxxx"}}`), ErrorCode: duet.CodeAssertionFailed,
		ErrorMessage: "order status is \"cancelled by alice's token\"", Artifacts: []string{"art_1"}}
	if err := db.SaveStepResult(t.Context(), l, x.ID, res, map[string]any{"order": "alice's order data"}); err != nil {
		t.Fatal(err)
	}
	x.Status, x.FinishedAt, x.Vars = duet.StatusFailed, &now, map[string]any{"order": "alice's order data"}
	x.ErrorCode, x.ErrorMessage = duet.CodeAssertionFailed, "step 1: order status is \"cancelled by alice's token\""
	if err := db.FinishExecution(t.Context(), l, x); err != nil {
		t.Fatal(err)
	}
	// The other cases never ran: the run ends in error (a verdict would
	// need every result).
	run.Status, run.FinishedAt, run.ErrorCode, run.ErrorMessage = duet.StatusError, &now, duet.CodeAssertionFailed, "case 1: order status is \"cancelled by alice's token\""
	if err := db.FinishRun(t.Context(), l, run); err != nil {
		t.Fatal(err)
	}
	return run, execs
}

// TestGetRunPages: get_test_run of a run whose executions exceed the result
// limit (a 20,000-case run against the default 4 MiB; here 1,500 cases
// against 128 KiB, to stay quick under the race detector) answers — it used
// to be TOO_LARGE whatever one asked — one page of executions at a time and
// says how to get the next; the pages cover every execution once.
func TestGetRunPages(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{Limits: catalog.Limits{MaxResultBytes: 128 << 10}})
	const n = 1_500
	run, _ := bigRun(t, c, db, task, n)
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		args := map[string]any{"runId": run.ID}
		if cursor != "" {
			args["cursor"] = cursor
		}
		if pages == 0 {
			args["limit"] = 300
		}
		r := call(t, c, "alice", catalog.ToolGetRun, args)
		out := decode[catalog.GetRunOut](t, r)
		pages++
		for _, x := range out.Executions {
			if seen[x.ID] {
				t.Fatalf("execution %s on two pages", x.ID)
			}
			seen[x.ID] = true
		}
		if pages == 1 && (len(out.Executions) != 300 || !strings.Contains(r.Text, "Executions 1 to 300 of 1500") ||
			!strings.Contains(r.Text, "1200 more execution(s); call get_test_run again with cursor "+out.NextCursor)) {
			t.Fatalf("first page: %d executions, text ends %q", len(out.Executions), r.Text[max(0, len(r.Text)-300):])
		}
		if out.NextCursor == "" {
			break
		}
		cursor = out.NextCursor
	}
	if want := 1 + (n-300+199)/200; len(seen) != n || pages != want {
		t.Fatalf("got %d executions in %d pages, want %d in %d", len(seen), pages, n, want)
	}
	bad := call(t, c, "alice", catalog.ToolGetRun, map[string]any{"runId": run.ID, "cursor": "@@"})
	if bad.Code != duet.CodeInvalidArgument {
		t.Fatalf("bad cursor: got %s", bad.Code)
	}
}

// TestSharedRunIsRestricted: alice's run of a task shared with bob used her
// credentials: bob (and get_test_task's last run) sees statuses, timings and
// error codes, never its outputs, variables, screenshots or messages; alice
// sees everything.
func TestSharedRunIsRestricted(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{})
	run, execs := bigRun(t, c, db, task, 2)
	secret := []string{"alice's customer", "4111", "alice's order data", "alice's token", "art_1"}

	full := call(t, c, "alice", catalog.ToolGetExecutionResult, map[string]any{"executionId": execs[0].ID})
	for _, s := range secret {
		if !strings.Contains(string(full.Structured), s) && !strings.Contains(full.Text, s) {
			t.Fatalf("alice's own view lacks %q: %s", s, full.Structured)
		}
	}
	if x := decode[catalog.GetExecutionOut](t, full); x.Disclosure != duet.DiscloseFull {
		t.Fatalf("alice's disclosure: %s", x.Disclosure)
	}

	for _, r := range []*catalog.Result{
		call(t, c, "bob", catalog.ToolGetExecutionResult, map[string]any{"executionId": execs[0].ID}),
		call(t, c, "bob", catalog.ToolGetRun, map[string]any{"runId": run.ID}),
		call(t, c, "bob", catalog.ToolGetTask, map[string]any{"taskId": task.ID}),
	} {
		if r.IsError {
			t.Fatalf("bob: %s", r.Text)
		}
		text := r.Text + string(r.Structured)
		for _, s := range secret {
			if strings.Contains(text, s) {
				t.Errorf("bob sees %q of alice's run:\n%s", s, text)
			}
		}
		for _, want := range []string{"ASSERTION_FAILED", "shown only to alice"} {
			if !strings.Contains(text, want) {
				t.Errorf("bob's view does not show %q:\n%s", want, text)
			}
		}
	}
	x := decode[catalog.GetExecutionOut](t, call(t, c, "bob", catalog.ToolGetExecutionResult, map[string]any{"executionId": execs[0].ID}))
	if x.Disclosure != duet.DiscloseRestricted || len(x.Execution.Steps) != 1 || x.Execution.Steps[0].Status != duet.StatusFailed ||
		x.Execution.Steps[0].SavedAs != "order" || len(x.Execution.Variables) != 0 || x.Execution.StartedAt == "" {
		t.Fatalf("bob's restricted view: %+v", x)
	}
}

// BenchmarkGetRunPage measures get_test_run on a 20,000-case run: one page
// of the default 200 executions, and the size of that page.
//
//	go test ./internal/catalog -run '^$' -bench GetRunPage -benchtime 50x
func BenchmarkGetRunPage(b *testing.B) {
	db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := compiler.CompileSuite(b.Context(), []byte(suite), "", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := db.ApplySuite(b.Context(), "alice", s)
	if err != nil {
		b.Fatal(err)
	}
	c := catalog.New(db, catalog.Options{})
	run, _ := bigRun(b, c, db, res.Task, 20_000)
	args, _ := json.Marshal(map[string]any{"runId": run.ID})
	req := catalog.Request{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP}, Tool: catalog.ToolGetRun, Args: args}
	var size int
	for b.Loop() {
		r, err := c.Call(b.Context(), req)
		if err != nil || r.IsError {
			b.Fatalf("%v %s", err, r.Text)
		}
		size = len(r.Structured) + len(r.Text)
	}
	b.ReportMetric(float64(size), "bytes/page")
}
