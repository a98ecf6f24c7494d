// Package storetest is the one test suite every duet.Store implementation
// must pass. An engine's tests call Run with a function that opens a fresh,
// empty store.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

// Opener returns a new, empty store; it registers its own cleanup.
type Opener func(t *testing.T) duet.Store

// Run runs the whole suite against stores made by open.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, duet.Store)
	}{
		{"ApplySuite", testApplySuite},
		{"SuiteSources", testSuiteSources}, // suitesource.go
		{"CaseVersions", testCaseVersions}, // caseversion.go
		{"TaskOverview", testTaskOverview},
		{"ReadTogether", testReadTogether},
		{"ReadTogetherParts", testReadTogetherParts}, // readparts.go
		{"Visibility", testVisibility},
		{"TaskPagination", testTaskPagination},
		{"TaskListBranches", testTaskListBranches},
		{"Drafts", testDrafts},
		{"RunLifecycle", testRunLifecycle},
		{"RunCounts", testRunCounts},
		{"ExecutionPages", testExecutionPages},
		{"RunIdempotency", testRunIdempotency},
		{"RunIdempotencyConcurrent", testRunIdempotencyConcurrent},
		{"ClaimExpiredLease", testClaimExpiredLease},
		{"QueueFairWhileRunning", testQueueFairWhileRunning},
		{"QueueFairOneAtATime", testQueueFairOneAtATime},
		{"QueueCap", testQueueCap},
		{"LostWorker", testLostWorker},
		{"Cancel", testCancel},
		{"Tokens", testTokens},
		{"Audit", testAudit},
		{"AuditWithTheChange", testAuditWithTheChange},
		{"Teams", testTeams},
		{"TeamRoles", testTeamRoles},
		{"TeamReferences", testTeamReferences},
		{"TokenLineage", testTokenLineage},
		{"StopRequests", testStopRequests},
		{"PostRun", testPostRun},
		{"Sessions", testSessions},
		{"OAuth", testOAuth},
		{"Schedules", testSchedules},
		{"ScheduleClaimConcurrent", testScheduleClaimConcurrent},
		{"RunOrigin", testRunOrigin},
		{"ContractStore", testContractStore},
		{"Language", testLanguage},
		{"Retries", testRetries},
		{"TraceModes", testTraceModes},
		{"Baselines", testBaselines},
		{"BaselineFence", testBaselineFence},
		{"Metrics", testMetrics},
		{"SavedSessions", testSavedSessions},
		{"AIPlans", testAIPlans},
		{"LLMUsage", testLLMUsage},
		{"Webhooks", testWebhooks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

func step(i int, expr string) duet.Step {
	return duet.Step{Index: i, Kind: duet.StepAssert, Name: expr, Assert: &duet.AssertStep{Expr: expr}}
}

func suite(name string, cases ...string) *duet.Suite {
	s := &duet.Suite{Task: duet.Task{Name: name, Description: "d", BaseURL: "http://127.0.0.1:1"}}
	for _, k := range cases {
		s.Cases = append(s.Cases, &duet.Case{Key: k, Title: "title " + k, Source: "src " + k, SourceHash: "h-" + k, Steps: []duet.Step{step(0, "true")}})
	}
	return s
}

func mustApply(t *testing.T, s duet.Store, owner string, su *duet.Suite) *duet.ApplyResult {
	t.Helper()
	res, err := s.ApplySuite(ctx(t), owner, su)
	if err != nil {
		t.Fatalf("ApplySuite: %v", err)
	}
	return res
}

func wantCode(t *testing.T, err error, want duet.Code) {
	t.Helper()
	if got := duet.ErrorCode(err); got != want {
		t.Fatalf("error code: got %q (%v), want %q", got, err, want)
	}
}

func testApplySuite(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("shop", "a", "b"))
	if res.TaskAction != duet.ApplyCreated || len(res.Cases) != 2 || res.Cases[0].Action != duet.ApplyCreated {
		t.Fatalf("first apply: got %+v", res)
	}
	again := mustApply(t, s, "alice", suite("shop", "a", "b"))
	if again.Changed() {
		t.Fatalf("re-applying an unchanged suite changed something: %+v", again)
	}
	if again.Task.ID != res.Task.ID {
		t.Fatalf("task id changed: got %s, want %s", again.Task.ID, res.Task.ID)
	}
	// Change case a, drop case b, add c.
	su := suite("shop", "a", "c")
	su.Cases[0].SourceHash = "h-a2"
	su.Task.Description = "new"
	third := mustApply(t, s, "alice", su)
	got := map[string]duet.ApplyAction{}
	for _, c := range third.Cases {
		got[c.Key] = c.Action
	}
	want := map[string]duet.ApplyAction{"a": duet.ApplyUpdated, "b": duet.ApplyArchived, "c": duet.ApplyCreated}
	if diff := cmp.Diff(want, got); diff != "" || third.TaskAction != duet.ApplyUpdated {
		t.Fatalf("third apply (-want +got):\n%s task=%s", diff, third.TaskAction)
	}
	cases, _, total, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(cases) != 2 || cases[0].Key != "a" || cases[0].Version != 2 || cases[1].Key != "c" {
		t.Fatalf("active cases: got total=%d %+v", total, cases)
	}
	if n, err := s.CountCases(ctx(t), res.Task.ID); err != nil || n != 2 {
		t.Fatalf("CountCases: got %d %v, want 2", n, err)
	}
	_, _, all, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID, IncludeArchived: true})
	if all != 3 {
		t.Fatalf("with archived: got %d, want 3", all)
	}
	// The same name for another owner is another task.
	other := mustApply(t, s, "bob", suite("shop", "a"))
	if other.Task.ID == res.Task.ID || other.TaskAction != duet.ApplyCreated {
		t.Fatalf("bob's task: got %+v", other)
	}
	// Duplicate keys are refused and nothing is written.
	dup := suite("dup", "x", "x")
	_, err = s.ApplySuite(ctx(t), "alice", dup)
	wantCode(t, err, duet.CodeInvalidArgument)
	_, err = s.FindTaskByName(ctx(t), "alice", "dup")
	wantCode(t, err, duet.CodeNotFound)
}

func testVisibility(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("private", "a"))
	id := res.Task.ID
	if _, err := s.FindTaskByID(ctx(t), "alice", id); err != nil {
		t.Fatalf("owner: %v", err)
	}
	_, errOther := s.FindTaskByID(ctx(t), "bob", id)
	_, errMissing := s.FindTaskByID(ctx(t), "bob", "task_missing")
	wantCode(t, errOther, duet.CodeNotFound)
	wantCode(t, errMissing, duet.CodeNotFound)
	if duet.ErrorMessage(errOther) == "" || len(duet.ErrorMessage(errOther)) != len(duet.ErrorMessage(errMissing))+len(id)-len("task_missing") {
		// Messages differ only by the id the caller sent.
		t.Fatalf("not-found messages differ in shape: %q vs %q", duet.ErrorMessage(errOther), duet.ErrorMessage(errMissing))
	}
	tasks, _, total, err := s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "bob"})
	if err != nil || total != 0 || len(tasks) != 0 {
		t.Fatalf("bob's tasks: got %d %v %v, want none", total, tasks, err)
	}
	wantCode(t, s.ShareTask(ctx(t), "bob", id, "bob"), duet.CodeNotFound) // only the owner shares
	if err := s.ShareTask(ctx(t), "alice", id, "bob"); err != nil {
		t.Fatal(err)
	}
	task, err := s.FindTaskByID(ctx(t), "bob", id)
	if err != nil {
		t.Fatalf("shared: %v", err)
	}
	if diff := cmp.Diff([]string{"bob"}, task.SharedWith); diff != "" {
		t.Fatalf("sharedWith (-want +got):\n%s", diff)
	}
	cases, _, _, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: id})
	if _, err := s.FindCaseByID(ctx(t), "bob", cases[0].ID); err != nil {
		t.Fatalf("bob reads a shared case: %v", err)
	}
	_, err = s.FindCaseByID(ctx(t), "carol", cases[0].ID)
	wantCode(t, err, duet.CodeNotFound)
	if err := s.UnshareTask(ctx(t), "alice", id, "bob"); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindTaskByID(ctx(t), "bob", id)
	wantCode(t, err, duet.CodeNotFound)
	wantCode(t, s.UnshareTask(ctx(t), "alice", id, "bob"), duet.CodeNotFound)
	wantCode(t, s.ShareTask(ctx(t), "alice", id, "alice"), duet.CodeInvalidArgument)
}

func testTaskPagination(t *testing.T, s duet.Store) {
	for i := range 7 {
		mustApply(t, s, "alice", suite(fmt.Sprintf("task-%d", i), "a"))
	}
	mustApply(t, s, "bob", suite("bobs", "a"))
	var names []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		tasks, next, total, err := s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "alice", Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if total != 7 {
			t.Fatalf("total: got %d, want 7", total)
		}
		for _, tk := range tasks {
			names = append(names, tk.Name)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(names) != 7 || names[0] != "task-0" || names[6] != "task-6" {
		t.Fatalf("pages: got %v", names)
	}
	tasks, _, total, err := s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "alice", Query: "K-3"})
	if err != nil || total != 1 || tasks[0].Name != "task-3" {
		t.Fatalf("query: got %d %v %v", total, tasks, err)
	}
	_, _, _, err = s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "alice", Cursor: "!!"})
	wantCode(t, err, duet.CodeInvalidArgument)
}

// testTaskListBranches lists the tasks of a viewer who sees them every way
// at once — owned, owned by a team of hers, shared with her, shared with a
// team of hers, and her own task shared with her team too — page by page:
// each visible task exactly once, in id order, the total exact on every
// page, a filter counted as it filters, and a cursor that stays good while
// tasks are added.
func testTaskListBranches(t *testing.T, s duet.Store) {
	c := ctx(t)
	if _, err := s.CreateTeam(c, "bob", "qa"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddTeamMember(c, "bob", "qa", "alice"); err != nil {
		t.Fatal(err)
	}
	apply := func(owner, name string) string { return mustApply(t, s, owner, suite(name, "a")).Task.ID }
	share := func(owner, id, user string) {
		t.Helper()
		if err := s.ShareTask(c, owner, id, user); err != nil {
			t.Fatal(err)
		}
	}
	a1 := apply("alice", "a1")
	teamOwned := apply("bob", "b-team")
	if _, err := s.TransferTask(c, "bob", teamOwned, duet.TeamPrincipal("qa")); err != nil {
		t.Fatal(err)
	}
	a2 := apply("alice", "a2")
	share("alice", a2, duet.TeamPrincipal("qa")) // hers, and her team's share
	shared := apply("bob", "b-shared")
	share("bob", shared, "alice")
	teamShared := apply("bob", "b-teamshared")
	share("bob", teamShared, duet.TeamPrincipal("qa"))
	both := apply("bob", "b-both")
	share("bob", both, "alice")
	share("bob", both, duet.TeamPrincipal("qa"))
	apply("carol", "c-hidden")
	apply("bob", "b-hidden")
	a3 := apply("alice", "a3")
	want := []string{a1, teamOwned, a2, shared, teamShared, both, a3}
	slices.Sort(want)

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		tasks, next, total, err := s.FindTasks(c, duet.TaskFilter{Viewer: "alice", Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if total != len(want) {
			t.Fatalf("total on page %d: got %d, want %d", pages, total, len(want))
		}
		for _, tk := range tasks {
			got = append(got, tk.ID)
		}
		if pages == 0 {
			// Added after the first page: listed at the end, nothing
			// before it repeated or skipped.
			want = append(want, apply("alice", "a-late"))
			apply("bob", "b-late-hidden")
			lateShared := apply("bob", "b-late-shared")
			share("bob", lateShared, duet.TeamPrincipal("qa"))
			want = append(want, lateShared)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("alice's tasks page by page (-want +got):\n%s", diff)
	}
	for _, f := range []struct {
		filter duet.TaskFilter
		want   []string
	}{
		{duet.TaskFilter{Viewer: "alice", Query: "b-"}, []string{teamOwned, shared, teamShared, both, want[len(want)-1]}},
		{duet.TaskFilter{Viewer: "alice", Owner: duet.TeamPrincipal("qa")}, []string{teamOwned}},
		{duet.TaskFilter{Viewer: "alice", Owner: "alice"}, []string{a1, a2, a3, want[len(want)-2]}},
		{duet.TaskFilter{Viewer: "dave"}, nil},
	} {
		tasks, _, total, err := s.FindTasks(c, f.filter)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tk := range tasks {
			ids = append(ids, tk.ID)
		}
		if total != len(f.want) || !slices.Equal(ids, f.want) {
			t.Errorf("%+v: got %v (total %d), want %v", f.filter, ids, total, f.want)
		}
		// The same page by page: a filter and a cursor together.
		var paged []string
		f.filter.Limit = 1
		for pages := 0; pages <= len(f.want); pages++ {
			tasks, next, total, err := s.FindTasks(c, f.filter)
			if err != nil {
				t.Fatal(err)
			}
			if total != len(f.want) {
				t.Errorf("%+v: total %d, want %d", f.filter, total, len(f.want))
			}
			for _, tk := range tasks {
				paged = append(paged, tk.ID)
			}
			if next == "" {
				break
			}
			f.filter.Cursor = next
		}
		if !slices.Equal(paged, f.want) {
			t.Errorf("%+v page by page: got %v, want %v", f.filter, paged, f.want)
		}
	}
}

func testDrafts(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("shop", "a"))
	d := &duet.Case{TaskID: res.Task.ID, Key: "gen-1", Title: "generated", Source: "s", SourceHash: "h", CreatedBy: "alice", Steps: []duet.Step{step(0, "true")}}
	if err := s.SaveDraftCase(ctx(t), d); err != nil {
		t.Fatal(err)
	}
	if d.Status != duet.CaseDraft || d.Version != 1 {
		t.Fatalf("draft: got %+v", d)
	}
	d2 := *d
	d2.ID = ""
	if err := s.SaveDraftCase(ctx(t), &d2); err != nil || d2.Version != 2 || d2.ID != d.ID {
		t.Fatalf("second draft: got %+v %v", d2, err)
	}
	if !d2.CreatedAt.Equal(d.CreatedAt.Truncate(time.Microsecond)) { // as stored
		t.Fatalf("second draft: created %v, want the first's %v", d2.CreatedAt, d.CreatedAt)
	}
	wantCode(t, s.SaveDraftCase(ctx(t), &duet.Case{TaskID: res.Task.ID, Key: "a", Title: "t"}), duet.CodeConflict)
	// A draft is its author's proposal: another user's draft of the key
	// does not replace it.
	wantCode(t, s.SaveDraftCase(ctx(t), &duet.Case{TaskID: res.Task.ID, Key: "gen-1", Title: "bob's", CreatedBy: "bob", Steps: []duet.Step{step(0, "true")}}), duet.CodeConflict)
	wantCode(t, s.SaveDraftCase(ctx(t), &duet.Case{TaskID: res.Task.ID, Title: "no key"}), duet.CodeInvalidArgument)
	_, _, n, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	_, _, withDrafts, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID, IncludeDrafts: true})
	if n != 1 || withDrafts != 2 {
		t.Fatalf("counts: got %d and %d, want 1 and 2", n, withDrafts)
	}
	// Re-applying the suite keeps drafts.
	again := mustApply(t, s, "alice", suite("shop", "a"))
	if again.Changed() {
		t.Fatalf("apply archived a draft: %+v", again)
	}
}

func newRun(t *testing.T, s duet.Store, owner string) (*duet.Run, []*duet.Execution) {
	t.Helper()
	res := mustApply(t, s, owner, suite("t-"+duet.NewID("x"), "a", "b"))
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: owner, CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	return run, execs
}

func testRunLifecycle(t *testing.T, s duet.Store) {
	run, _ := newRun(t, s, "alice")
	got, err := s.FindRunByID(ctx(t), "alice", run.ID)
	if err != nil || got.Status != duet.StatusQueued || got.Totals.Cases != 2 || got.Totals.Pending != 2 {
		t.Fatalf("queued run: got %+v %v", got, err)
	}
	_, err = s.FindRunByID(ctx(t), "mallory", run.ID)
	wantCode(t, err, duet.CodeNotFound)
	other, _ := newRun(t, s, "alice")
	if c, err := s.ClaimRunByID(ctx(t), other.ID, "w0", time.Minute); err != nil || c == nil || c.ID != other.ID {
		t.Fatalf("ClaimRunByID: got %+v %v", c, err)
	}
	if c, err := s.ClaimRunByID(ctx(t), other.ID, "w0", time.Minute); err != nil || c != nil {
		t.Fatalf("ClaimRunByID of a held run: got %+v %v, want none", c, err)
	}
	claimed, err := s.ClaimRun(ctx(t), "w1", time.Minute)
	if err != nil || claimed == nil || claimed.ID != run.ID || claimed.Status != duet.StatusRunning || claimed.Attempt != 1 {
		t.Fatalf("claim: got %+v %v", claimed, err)
	}
	if again, err := s.ClaimRun(ctx(t), "w2", time.Minute); err != nil || again != nil {
		t.Fatalf("second claim: got %+v %v, want none", again, err)
	}
	l1 := duet.LeaseOf(claimed, "w1")
	if _, err := s.RenewLease(ctx(t), duet.Lease{RunID: run.ID, Worker: "w2", Token: claimed.Attempt}, time.Minute); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Fatalf("renew by a stranger: got %v, want LEASE_LOST", err)
	}
	execs, err := s.FindExecutions(ctx(t), run.ID)
	if err != nil || len(execs) != 2 || len(execs[0].Steps) != 1 {
		t.Fatalf("executions: got %+v %v", execs, err)
	}
	e := execs[0]
	now := time.Now()
	e.StartedAt = &now
	if err := s.StartExecution(ctx(t), l1, e); err != nil {
		t.Fatal(err)
	}
	r0 := &duet.StepResult{Index: 0, Kind: duet.StepAssert, Name: "true", Status: duet.StatusPassed, DurationMs: 3, Output: json.RawMessage(`true`)}
	if err := s.SaveStepResult(ctx(t), l1, e.ID, r0, map[string]any{"x": 1.0}); err != nil {
		t.Fatal(err)
	}
	e.Status, e.FinishedAt, e.Vars = duet.StatusPassed, &now, map[string]any{"x": 1.0}
	if err := s.FinishExecution(ctx(t), l1, e); err != nil {
		t.Fatal(err)
	}
	gotE, err := s.FindExecutionByID(ctx(t), "alice", e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*duet.StepResult{r0}, gotE.Results); diff != "" || gotE.Status != duet.StatusPassed || gotE.Vars["x"] != 1.0 {
		t.Fatalf("execution (-want +got):\n%s %+v", diff, gotE)
	}
	_, err = s.FindExecutionByID(ctx(t), "mallory", e.ID)
	wantCode(t, err, duet.CodeNotFound)
	// A restarted attempt forgets earlier results.
	if err := s.StartExecution(ctx(t), l1, execs[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveStepResult(ctx(t), l1, execs[1].ID, r0, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.StartExecution(ctx(t), l1, execs[1]); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.FindExecutionByID(ctx(t), "", execs[1].ID); len(again.Results) != 0 {
		t.Fatalf("restarted execution kept %d results", len(again.Results))
	}
	// Release puts it back; another worker resumes it.
	if err := s.ReleaseRun(ctx(t), l1); err != nil {
		t.Fatal(err)
	}
	resumed, err := s.ClaimRun(ctx(t), "w2", time.Minute)
	if err != nil || resumed == nil || resumed.ID != run.ID || resumed.Attempt != 2 {
		t.Fatalf("resume: got %+v %v", resumed, err)
	}
	// The run ends in error with a case left over: that case is skipped.
	resumed.Status, resumed.FinishedAt, resumed.ErrorCode = duet.StatusError, &now, duet.CodeInternal
	if err := s.FinishRun(ctx(t), duet.LeaseOf(resumed, "w2"), resumed); err != nil {
		t.Fatal(err)
	}
	final, _ := s.FindRunByID(ctx(t), "", run.ID)
	if final.Status != duet.StatusError || final.Totals.Passed != 1 || final.Totals.Cancelled != 1 || final.FinishedAt == nil {
		t.Fatalf("final: got %+v", final)
	}
	runs, _, err := s.FindRuns(ctx(t), duet.RunFilter{Viewer: "alice", TaskID: run.TaskID})
	if err != nil || len(runs) != 1 {
		t.Fatalf("FindRuns: got %v %v", runs, err)
	}
	if runs, _, _ := s.FindRuns(ctx(t), duet.RunFilter{Viewer: "mallory"}); len(runs) != 0 {
		t.Fatalf("mallory sees %d runs", len(runs))
	}
}

func idemParams(t *testing.T, s duet.Store, taskID string, cases []*duet.Case, key, hash string) duet.StartRunParams {
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	return duet.StartRunParams{
		Run:         &duet.Run{TaskID: taskID, TriggeredBy: "alice", CallSource: duet.SourceMCP},
		Executions:  execs,
		Idempotency: &duet.IdempotencyRecord{Caller: "alice", Key: key, Tool: "start_test_run", ArgsHash: hash, ExpiresAt: time.Now().Add(time.Hour)},
		ResultFunc: func(r *duet.Run) (json.RawMessage, error) {
			return json.Marshal(map[string]string{"runId": r.ID})
		},
	}
}

func testRunIdempotency(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("idem", "a"))
	cases, _, _, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	first, replayed, err := s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "k1", "h1"))
	if err != nil || replayed {
		t.Fatalf("first: %v replayed=%v", err, replayed)
	}
	second, replayed, err := s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "k1", "h1"))
	if err != nil || !replayed || string(second.Result) != string(first.Result) {
		t.Fatalf("replay: got %s replayed=%v %v, want %s", second.Result, replayed, err, first.Result)
	}
	_, _, err = s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "k1", "h2"))
	wantCode(t, err, duet.CodeIdempotencyConflict)
	// The key is scoped per caller.
	p := idemParams(t, s, res.Task.ID, cases, "k1", "h2")
	p.Idempotency.Caller = "bob"
	if _, replayed, err := s.CreateRun(ctx(t), p); err != nil || replayed {
		t.Fatalf("bob's key: %v replayed=%v", err, replayed)
	}
	runs, _, _ := s.FindRuns(ctx(t), duet.RunFilter{TaskID: res.Task.ID})
	if len(runs) != 2 {
		t.Fatalf("runs: got %d, want 2", len(runs))
	}
	// Expired records no longer replay and are deleted.
	n, err := s.DeleteExpiredIdempotency(ctx(t), time.Now().Add(2*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("expired: got %d %v, want 2", n, err)
	}
	if _, replayed, err := s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "k1", "h2")); err != nil || replayed {
		t.Fatalf("after expiry: %v replayed=%v", err, replayed)
	}
}

func testRunIdempotencyConcurrent(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("idem-c", "a"))
	cases, _, _, _ := s.FindCases(ctx(t), duet.CaseFilter{TaskID: res.Task.ID})
	const n = 100
	var wg sync.WaitGroup
	results := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			rec, _, err := s.CreateRun(ctx(t), idemParams(t, s, res.Task.ID, cases, "same", "h"))
			errs[i] = err
			if rec != nil {
				results[i] = string(rec.Result)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if results[i] != results[0] {
			t.Fatalf("call %d: got %s, want %s", i, results[i], results[0])
		}
	}
	runs, _, _ := s.FindRuns(ctx(t), duet.RunFilter{TaskID: res.Task.ID})
	if len(runs) != 1 {
		t.Fatalf("runs created by %d identical concurrent calls: got %d, want 1", n, len(runs))
	}
}

func testClaimExpiredLease(t *testing.T, s duet.Store) {
	run, _ := newRun(t, s, "alice")
	if c, err := s.ClaimRun(ctx(t), "crashed", -time.Second); err != nil || c.ID != run.ID {
		t.Fatalf("claim: %+v %v", c, err)
	}
	c, err := s.ClaimRun(ctx(t), "next", time.Minute)
	if err != nil || c == nil || c.ID != run.ID || c.Attempt != 2 {
		t.Fatalf("reclaim of an expired lease: got %+v %v", c, err)
	}
}

func testCancel(t *testing.T, s duet.Store) {
	queued, _ := newRun(t, s, "alice")
	_, err := s.RequestCancel(ctx(t), "mallory", queued.ID)
	wantCode(t, err, duet.CodeNotFound)
	got, err := s.RequestCancel(ctx(t), "alice", queued.ID)
	if err != nil || got.Status != duet.StatusCancelled || got.Totals.Cancelled != 2 {
		t.Fatalf("cancel queued: got %+v %v", got, err)
	}
	if c, _ := s.ClaimRun(ctx(t), "w", time.Minute); c != nil {
		t.Fatalf("a cancelled run was claimed: %+v", c)
	}
	running, _ := newRun(t, s, "alice")
	claimed, err := s.ClaimRun(ctx(t), "w", time.Minute)
	if err != nil || claimed == nil {
		t.Fatal(err)
	}
	got, err = s.RequestCancel(ctx(t), "alice", running.ID)
	if err != nil || got.Status != duet.StatusRunning || !got.CancelRequested {
		t.Fatalf("cancel running: got %+v %v", got, err)
	}
	renewed, err := s.RenewLease(ctx(t), duet.LeaseOf(claimed, "w"), time.Minute)
	if err != nil || !renewed.CancelRequested {
		t.Fatalf("worker sees the request: got %+v %v", renewed, err)
	}
}

func testTokens(t *testing.T, s duet.Store) {
	tok := &duet.Token{UserID: "alice", Name: "laptop", Hash: "hash-1"}
	if err := s.CreateToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindTokenByHash(ctx(t), "hash-1")
	if err != nil || got.UserID != "alice" {
		t.Fatalf("find: %+v %v", got, err)
	}
	_, err = s.FindTokenByHash(ctx(t), "nope")
	wantCode(t, err, duet.CodeUnauthenticated)
	past := time.Now().Add(-time.Hour)
	if err := s.CreateToken(ctx(t), &duet.Token{UserID: "alice", Hash: "old", ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindTokenByHash(ctx(t), "old")
	wantCode(t, err, duet.CodeUnauthenticated)
	list, _ := s.FindTokens(ctx(t), "alice")
	if len(list) != 2 {
		t.Fatalf("list: got %d, want 2", len(list))
	}
	wantCode(t, s.DeleteToken(ctx(t), "bob", tok.ID), duet.CodeNotFound)
	if err := s.DeleteToken(ctx(t), "alice", tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindTokenByHash(ctx(t), "hash-1")
	wantCode(t, err, duet.CodeUnauthenticated)
}

func testAudit(t *testing.T, s duet.Store) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	recs := []*duet.AuditRecord{
		{Time: now, TraceID: "t1", CallSource: duet.SourceMCP, Caller: "alice", Method: "tools/call", Tool: "get_test_task", Outcome: duet.OutcomeOK, DurationUs: 5, ArgBytes: 10, ResultBytes: 20},
		{Time: now.Add(time.Millisecond), TraceID: "t2", CallSource: duet.SourceStdio, Caller: "bob", Method: "tools/call", Tool: "start_test_run", Outcome: duet.CodeNotFound},
	}
	if err := s.AppendAudit(ctx(t), recs); err != nil {
		t.Fatal(err)
	}
	all, err := s.FindAudit(ctx(t), duet.AuditFilter{})
	if err != nil || len(all) != 2 || all[0].TraceID != "t2" {
		t.Fatalf("all: got %+v %v", all, err)
	}
	if diff := cmp.Diff(recs[0], all[1]); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	for _, f := range []duet.AuditFilter{{Caller: "bob"}, {Tool: "start_test_run"}, {CallSource: duet.SourceStdio}, {Outcome: duet.CodeNotFound}, {TraceID: "t2"}, {Since: now.Add(time.Microsecond)}} {
		got, err := s.FindAudit(ctx(t), f)
		if err != nil || len(got) != 1 || got[0].TraceID != "t2" {
			t.Fatalf("filter %+v: got %+v %v", f, got, err)
		}
	}
	// A batch larger than one statement of a store that splits it: every
	// record gets the id it is stored under, in order.
	var batch []*duet.AuditRecord
	for i := range 150 {
		batch = append(batch, &duet.AuditRecord{Time: now, TraceID: fmt.Sprintf("batch-%03d", i), CallSource: duet.SourceMCP, Caller: "carol", Method: "tools/call", Outcome: duet.OutcomeOK})
	}
	if err := s.AppendAudit(ctx(t), batch); err != nil {
		t.Fatal(err)
	}
	stored, err := s.FindAudit(ctx(t), duet.AuditFilter{Caller: "carol", Limit: 1000})
	if err != nil || len(stored) != len(batch) {
		t.Fatalf("the batch: got %d records, %v, want %d", len(stored), err, len(batch))
	}
	for i, r := range stored { // newest first
		want := batch[len(batch)-1-i]
		if r.ID != want.ID || r.TraceID != want.TraceID || (i > 0 && r.ID >= stored[i-1].ID) {
			t.Fatalf("record %d: stored id %d trace %s, handed id %d trace %s", i, r.ID, r.TraceID, want.ID, want.TraceID)
		}
	}
}
