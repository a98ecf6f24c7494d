package api_test

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// finishedRun stores a finished run of the task's cases with the given
// outcomes (by case key), as a worker would have left it.
func finishedRun(t *testing.T, s duet.Store, taskID string, cases []*duet.Case, outcome map[string]duet.RunStatus, took time.Duration) string {
	t.Helper()
	ctx := t.Context()
	run := &duet.Run{TaskID: taskID, TriggeredBy: "alice", CallSource: duet.SourceAPI}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := s.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimRunByID(ctx, run.ID, "w", time.Minute)
	if err != nil || claimed == nil {
		t.Fatal(err)
	}
	l := duet.LeaseOf(claimed, "w")
	status := duet.StatusPassed
	start := time.Now()
	for _, x := range execs {
		x.StartedAt = &start
		if err := s.StartExecution(ctx, l, x); err != nil {
			t.Fatal(err)
		}
		for _, st := range x.Steps {
			if err := s.SaveStepResult(ctx, l, x.ID, &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Status: duet.StatusPassed}, nil); err != nil {
				t.Fatal(err)
			}
		}
		end := start.Add(took)
		x.Status, x.FinishedAt = outcome[x.CaseKey], &end
		if x.Status == duet.StatusFailed {
			status = duet.StatusFailed
		}
		if err := s.FinishExecution(ctx, l, x); err != nil {
			t.Fatal(err)
		}
	}
	end := start.Add(took)
	run.Status, run.StartedAt, run.FinishedAt = status, &start, &end
	if err := s.FinishRun(ctx, l, run); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// TestTrendsFlagFlakyCases: a case that passed and failed at the same
// version is flaky; one that failed at v1 and passed once fixed (v2) is
// not; pass rates and durations follow the runs, oldest first.
func TestTrendsFlagFlakyCases(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	svc, s := e.App.API, e.App.Store
	alice := duet.Caller{UserID: "alice", Source: duet.SourceAPI}
	src := "task: {name: t}\ncases:\n  - key: steady\n    title: steady\n    steps: [{set: {x: '1'}}]\n  - key: fixed\n    title: fixed\n    steps: [{set: {x: '1'}}]\n"
	applied, err := svc.ApplySuite(t.Context(), alice, api.ApplyIn{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, _ := s.FindCases(t.Context(), duet.CaseFilter{TaskID: applied.Task.ID})
	P, F := duet.StatusPassed, duet.StatusFailed
	finishedRun(t, s, applied.Task.ID, cases, map[string]duet.RunStatus{"steady": P, "fixed": F}, time.Second)
	finishedRun(t, s, applied.Task.ID, cases, map[string]duet.RunStatus{"steady": F, "fixed": F}, 2*time.Second)
	// fixed gets a new version, then passes.
	src2 := src[:len(src)-len("steps: [{set: {x: '1'}}]\n")] + "steps: [{set: {x: '2'}}]\n"
	if _, err := svc.ApplySuite(t.Context(), alice, api.ApplyIn{Source: src2}); err != nil {
		t.Fatal(err)
	}
	cases, _, _, _ = s.FindCases(t.Context(), duet.CaseFilter{TaskID: applied.Task.ID})
	last := finishedRun(t, s, applied.Task.ID, cases, map[string]duet.RunStatus{"steady": P, "fixed": P}, 3*time.Second)

	tr, err := svc.Trends(t.Context(), alice, applied.Task.ID, api.TrendsIn{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 3 || tr.Runs[2].RunID != last || tr.Runs[0].PassRate != 0.5 || tr.Runs[1].PassRate != 0 || tr.Runs[2].PassRate != 1 || tr.Runs[2].DurationMs < 3000 || tr.Runs[2].DurationMs > 60000 {
		t.Fatalf("runs: %+v", tr.Runs)
	}
	by := map[string]api.CaseTrend{}
	for _, c := range tr.Cases {
		by[c.Key] = c
	}
	if st := by["steady"]; !st.Flaky || len(st.FlakyAt) != 1 || st.FlakyAt[0] != 1 || st.Passed != 2 || st.Runs != 3 {
		t.Errorf("steady passed and failed at v1: %+v, want flaky", st)
	}
	if fx := by["fixed"]; fx.Flaky || len(fx.Points) != 3 || fx.Points[2].Version != 2 {
		t.Errorf("fixed failed at v1 and passed at v2: %+v, want not flaky", fx)
	}
	if tr.Flaky != 1 {
		t.Errorf("flaky count %d, want 1", tr.Flaky)
	}
	if _, err := svc.Trends(t.Context(), duet.Caller{UserID: "bob", Source: duet.SourceAPI}, applied.Task.ID, api.TrendsIn{}); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("bob's trends of alice's task: %v, want NOT_FOUND", err)
	}
}
