package storetest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testRetries: a case's retries and tags and a task's run settings are
// kept; an execution's failed attempt is kept whole, with its step
// results, when it is retried (never over an unfinished or incomplete
// attempt, never twice); the retried execution passing is flaky, counted
// apart in the run's totals, and the run's verdict is written over it.
func testRetries(t *testing.T, s duet.Store) {
	su := suite("retries-"+duet.NewID("x"), "a", "b")
	su.Task.Retries, su.Task.Parallel, su.Task.CaseTimeoutMs, su.Task.Tags = 1, 3, 60000, []string{"shop"}
	su.Cases[0].Retries, su.Cases[0].Tags = 2, []string{"shop", "smoke"}
	su.Cases[0].Steps = []duet.Step{step(0, "true"), step(1, "true")}
	next := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	su.Schedules = []*duet.Schedule{{Name: "smoke hourly", Every: time.Hour, Missed: duet.MissedSkip, Overlap: duet.OverlapSkip, NextFireAt: next, Tags: []string{"smoke"}}}
	res := mustApply(t, s, "alice", su)
	scheds, err := s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "alice", TaskID: res.Task.ID})
	if err != nil || len(scheds) != 1 || !slices.Equal(scheds[0].Tags, []string{"smoke"}) {
		t.Fatalf("a schedule's tags: %v %+v", err, scheds)
	}
	// Its tags change, its timing does not: the tags are kept, the slot too.
	su.Schedules[0].Tags = []string{"shop", "smoke"}
	mustApply(t, s, "alice", su)
	scheds, err = s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "alice", TaskID: res.Task.ID})
	if err != nil || len(scheds) != 1 || !slices.Equal(scheds[0].Tags, []string{"shop", "smoke"}) || !scheds[0].NextFireAt.Equal(next) {
		t.Fatalf("a schedule's changed tags: %v %+v", err, scheds)
	}
	task, err := s.FindTaskByID(ctx(t), "alice", res.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Retries != 1 || task.Parallel != 3 || task.CaseTimeoutMs != 60000 || !slices.Equal(task.Tags, []string{"shop"}) {
		t.Fatalf("task: retries %d parallel %d timeout %d tags %v", task.Retries, task.Parallel, task.CaseTimeoutMs, task.Tags)
	}
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: task.ID})
	if err != nil || len(cases) != 2 {
		t.Fatalf("cases: %v %v", cases, err)
	}
	a := cases[0]
	if a.Key != "a" || a.Retries != 2 || !slices.Equal(a.Tags, []string{"shop", "smoke"}) || cases[1].Retries != 0 || cases[1].Tags != nil {
		t.Fatalf("cases: got %+v / %+v", a, cases[1])
	}

	run := &duet.Run{TaskID: task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: a.ID, CaseKey: a.Key, CaseTitle: a.Title, CaseVersion: a.Version, Steps: a.Steps, Retries: a.Retries}
	y := &duet.Execution{CaseID: cases[1].ID, CaseKey: "b", CaseTitle: "b", CaseVersion: 1, Steps: cases[1].Steps}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x, y}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimRunByID(ctx(t), run.ID, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l := duet.LeaseOf(claimed, "w1")
	execs, err := s.FindExecutions(ctx(t), run.ID)
	if err != nil || len(execs) != 2 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	x = execs[0]
	if x.Retries != 2 || x.Attempt != 1 || len(x.Attempts) != 0 {
		t.Fatalf("new execution: retries %d attempt %d attempts %d", x.Retries, x.Attempt, len(x.Attempts))
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	x.StartedAt = &now
	if err := s.StartExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	// Running: not an attempt to keep.
	if err := s.RetryExecution(ctx(t), l, x); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("retry of a running attempt: got %v, want CONFLICT", err)
	}
	failed := &duet.StepResult{Index: 0, Kind: duet.StepAssert, Name: "true", Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed, ErrorMessage: "no", Artifacts: []string{"art-1"}}
	if err := s.SaveStepResult(ctx(t), l, x.ID, failed, map[string]any{"v": 1.0}); err != nil {
		t.Fatal(err)
	}
	x.Status, x.ErrorCode, x.ErrorMessage, x.FinishedAt = duet.StatusFailed, duet.CodeAssertionFailed, "step 1: no", &now
	if err := s.FinishExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	// One of its two step results: not kept, not retried.
	if err := s.RetryExecution(ctx(t), l, x); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("retry of an incomplete attempt: got %v, want CONFLICT", err)
	}
	skipped := &duet.StepResult{Index: 1, Kind: duet.StepAssert, Name: "true", Status: duet.StatusSkipped}
	if err := s.SaveStepResult(ctx(t), l, x.ID, skipped, map[string]any{"v": 1.0}); err != nil {
		t.Fatal(err)
	}
	// Another worker's lease cannot retry it.
	if err := s.RetryExecution(ctx(t), duet.Lease{RunID: run.ID, Worker: "w2", Token: l.Token}, x); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Fatalf("retry under another lease: got %v, want LEASE_LOST", err)
	}
	if err := s.RetryExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	if x.Attempt != 2 || x.Status != duet.StatusRunning || len(x.Results) != 0 || len(x.Attempts) != 1 {
		t.Fatalf("after the retry: attempt %d status %s results %d attempts %d", x.Attempt, x.Status, len(x.Results), len(x.Attempts))
	}
	// The same retry again (a replayed write): refused, nothing kept twice.
	stale := *x
	stale.Attempt = 1
	if err := s.RetryExecution(ctx(t), l, &stale); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("the same retry twice: got %v, want CONFLICT", err)
	}
	got, err := s.FindExecutionByID(ctx(t), "alice", x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempt != 2 || got.Status != duet.StatusRunning || len(got.Results) != 0 || len(got.Vars) != 0 || len(got.Attempts) != 1 {
		t.Fatalf("stored after the retry: %+v", got)
	}
	at := got.Attempts[0]
	if at.Attempt != 1 || at.Status != duet.StatusFailed || at.ErrorCode != duet.CodeAssertionFailed || at.ErrorMessage != "step 1: no" ||
		len(at.Results) != 2 || at.Results[0].Artifacts[0] != "art-1" || at.Results[1].Status != duet.StatusSkipped || at.StartedAt == nil || at.FinishedAt == nil {
		t.Fatalf("kept attempt: %+v", at)
	}
	// The second attempt passes: the execution is flaky.
	for i := range 2 {
		if err := s.SaveStepResult(ctx(t), l, x.ID, &duet.StepResult{Index: i, Kind: duet.StepAssert, Name: "true", Status: duet.StatusPassed}, nil); err != nil {
			t.Fatal(err)
		}
	}
	x.Status, x.FinishedAt = duet.StatusFlaky, &now
	if err := s.FinishExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryExecution(ctx(t), l, x); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("retry of a flaky execution: got %v, want CONFLICT", err)
	}
	y = execs[1]
	y.StartedAt = &now
	if err := s.StartExecution(ctx(t), l, y); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveStepResult(ctx(t), l, y.ID, &duet.StepResult{Index: 0, Kind: duet.StepAssert, Name: "true", Status: duet.StatusPassed}, nil); err != nil {
		t.Fatal(err)
	}
	y.Status, y.FinishedAt = duet.StatusPassed, &now
	if err := s.FinishExecution(ctx(t), l, y); err != nil {
		t.Fatal(err)
	}
	// Webhooks on flaky runs hear of this one; those on success too, those
	// on failure not.
	var flakyHook, failureHook *duet.Webhook
	for _, w := range []**duet.Webhook{&flakyHook, &failureHook} {
		on := duet.PostRunOnFlaky
		if w == &failureHook {
			on = duet.PostRunOnFailure
		}
		*w = newWebhook(run.TaskID, "on-"+string(on), on)
		if err := s.CreateWebhook(ctx(t), "alice", *w); err != nil {
			t.Fatal(err)
		}
	}
	claimed.Status, claimed.FinishedAt = duet.StatusPassed, &now
	if err := s.FinishRun(ctx(t), l, claimed); err != nil {
		t.Fatal(err)
	}
	for w, want := range map[*duet.Webhook]int{flakyHook: 1, failureHook: 0} {
		if ds, err := s.FindDeliveries(ctx(t), "alice", w.ID, 0); err != nil || len(ds) != want || want == 1 && ds[0].RunID != run.ID {
			t.Errorf("deliveries of the webhook on %s after a flaky run: %+v %v, want %d", w.On, ds, err, want)
		}
	}
	if claimed.Totals.Flaky != 1 || claimed.Totals.Passed != 1 || claimed.Totals.Cases != 2 {
		t.Fatalf("totals at the verdict: %+v", claimed.Totals)
	}
	for _, read := range []func() (*duet.Run, error){
		func() (*duet.Run, error) { return s.FindRunByID(ctx(t), "alice", run.ID) },
		func() (*duet.Run, error) {
			r, _, _, err := s.FindRunPage(ctx(t), "alice", duet.ExecutionFilter{RunID: run.ID})
			return r, err
		},
	} {
		r, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if r.Totals.Flaky != 1 || r.Totals.Passed != 1 || r.Totals.Cases != 2 {
			t.Fatalf("totals: %+v", r.Totals)
		}
	}
	page, _, err := s.FindExecutionPage(ctx(t), duet.ExecutionFilter{RunID: run.ID, Results: true})
	if err != nil || len(page) != 2 || page[0].Status != duet.StatusFlaky || page[0].Attempt != 2 || len(page[0].Attempts) != 1 || len(page[0].Results) != 2 {
		t.Fatalf("page: %v %+v", err, page)
	}
	// FindRunPage with results reads them as FindExecutionPage, attempts
	// included (readparts.go).
	if _, rpage, _, err := s.FindRunPage(ctx(t), "alice", duet.ExecutionFilter{RunID: run.ID, Results: true}); err != nil || !reflect.DeepEqual(rpage, page) {
		t.Fatalf("FindRunPage with results: %v\n got %+v\nwant %+v", err, rpage, page)
	}
	summary, _, err := s.FindExecutionPage(ctx(t), duet.ExecutionFilter{RunID: run.ID})
	if err != nil || summary[0].Attempt != 2 || summary[0].Retries != 2 {
		t.Fatalf("summary page: %v %+v", err, summary)
	}
	if gx, _, err := s.FindExecutionAndRun(ctx(t), "alice", x.ID); err != nil || len(gx.Attempts) != 1 || gx.Attempts[0].Results[0].ErrorCode != duet.CodeAssertionFailed {
		t.Fatalf("FindExecutionAndRun: %v %+v", err, gx)
	}
}
