package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testReadTogetherParts: every part of what FindTaskCases reads comes
// back as its own read answers it, for a viewer the task was shared with
// (the share list), with drafts (the filter's statuses), and for a page
// past the last case (an empty page still carries the count); and
// FindRunPage with results carries each execution's step results as
// FindExecutionPage does (the run's own case is testRetries').
func testReadTogetherParts(t *testing.T, s duet.Store) {
	c := ctx(t)
	res := mustApply(t, s, "alice", suite("parts-"+duet.NewID("x"), "a", "b", "c"))
	task := res.Task.ID
	if err := s.ShareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	draft := &duet.Case{TaskID: task, Key: "d", Title: "draft d", Source: "src d", SourceHash: "h-d", Steps: []duet.Step{step(0, "true")}, CreatedBy: "bob"}
	if err := s.SaveDraftCase(c, draft); err != nil {
		t.Fatal(err)
	}
	check := func(name string, f duet.CaseFilter, wantLen, wantTotal int, wantNext bool) string {
		t.Helper()
		gotT, gotC, gotNext, gotTotal, err := s.FindTaskCases(c, "bob", f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantT, err := s.FindTaskByID(c, "bob", task)
		if err != nil {
			t.Fatal(err)
		}
		wantC, wantN, wantTot, err := s.FindCases(c, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotT, wantT) || len(gotT.SharedWith) != 1 || gotT.SharedWith[0] != "bob" {
			t.Errorf("%s: task: got %+v, want %+v (shared with bob)", name, gotT, wantT)
		}
		if !reflect.DeepEqual(gotC, wantC) || len(gotC) != wantLen {
			t.Errorf("%s: cases: got %d %+v, want %d %+v", name, len(gotC), gotC, wantLen, wantC)
		}
		if gotNext != wantN || (gotNext != "") != wantNext {
			t.Errorf("%s: next: got %q, want %q", name, gotNext, wantN)
		}
		if gotTotal != wantTot || gotTotal != wantTotal {
			t.Errorf("%s: total: got %d, want %d (FindCases %d)", name, gotTotal, wantTotal, wantTot)
		}
		return gotNext
	}
	f := duet.CaseFilter{TaskID: task, IncludeDrafts: true, Limit: 3}
	next := check("with drafts", f, 3, 4, true)
	f.Cursor = next
	check("with drafts, last page", f, 1, 4, false)
	// After "c" there is only the draft: without drafts the page is empty
	// and the count still 3.
	check("empty page", duet.CaseFilter{TaskID: task, Cursor: next}, 0, 3, false)
	_, _, _, _, err := s.FindTaskCases(c, "mallory", duet.CaseFilter{TaskID: task, Cursor: next})
	wantCode(t, err, duet.CodeNotFound)
	_, _, _, _, err = s.FindTaskCases(c, "bob", duet.CaseFilter{TaskID: "no-such-task"})
	wantCode(t, err, duet.CodeNotFound)

	// A run's page with results.
	run, execs := newRun(t, s, "alice")
	claimed, err := s.ClaimRunByID(c, run.ID, "w", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	l := duet.LeaseOf(claimed, "w")
	now := time.Now()
	execs[1].StartedAt = &now
	if err := s.StartExecution(c, l, execs[1]); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.SaveStepResult(c, l, execs[1].ID, &duet.StepResult{Index: i, Kind: duet.StepAssert, Name: "true", Status: duet.StatusPassed}, map[string]any{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ef := range []duet.ExecutionFilter{{RunID: run.ID, Results: true}, {RunID: run.ID, Results: true, Limit: 1}, {RunID: run.ID}} {
		gotR, gotE, gotNext, err := s.FindRunPage(c, "alice", ef)
		if err != nil {
			t.Fatal(err)
		}
		wantR, _ := s.FindRunByID(c, "alice", run.ID)
		wantE, wantNext, _ := s.FindExecutionPage(c, ef)
		if !reflect.DeepEqual(gotR, wantR) || !reflect.DeepEqual(gotE, wantE) || gotNext != wantNext {
			t.Errorf("FindRunPage(%+v): got %+v %+v %q, want %+v %+v %q", ef, gotR, gotE, gotNext, wantR, wantE, wantNext)
		}
		if ef.Results && ef.Limit == 0 && (len(gotE) != 2 || len(gotE[1].Results) != 2 || gotE[1].Vars["i"] == nil || len(gotE[1].Steps) != 1) {
			t.Errorf("FindRunPage with results: got %+v", gotE)
		}
	}
}
