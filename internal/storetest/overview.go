package storetest

import (
	"reflect"
	"testing"

	"github.com/duet-test/duet"
)

// testTaskOverview: FindTaskOverview is FindTaskByID, CountCases and the
// latest run of FindRuns, read together — the same answers, the same
// NOT_FOUND for a task the viewer may not see.
func testTaskOverview(t *testing.T, s duet.Store) {
	c := ctx(t)
	res := mustApply(t, s, "alice", suite("overview-"+duet.NewID("x"), "a", "b", "c"))
	task := res.Task.ID
	check := func(viewer string, wantRun string) {
		t.Helper()
		o, err := s.FindTaskOverview(c, viewer, task)
		if err != nil {
			t.Fatalf("FindTaskOverview(%s): %v", viewer, err)
		}
		want, err := s.FindTaskByID(c, viewer, task)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.Task, want) {
			t.Errorf("task: got %+v, want %+v", o.Task, want)
		}
		if n, _ := s.CountCases(c, task); o.ActiveCases != n || n != 3 {
			t.Errorf("active cases: got %d, CountCases %d, want 3", o.ActiveCases, n)
		}
		if wantRun == "" {
			if o.LastRun != nil {
				t.Errorf("last run: got %+v, want none", o.LastRun)
			}
			return
		}
		runs, _, err := s.FindRuns(c, duet.RunFilter{Viewer: viewer, TaskID: task, Limit: 1})
		if err != nil || len(runs) != 1 {
			t.Fatalf("FindRuns: %v %v", runs, err)
		}
		if o.LastRun == nil || o.LastRun.ID != wantRun || !reflect.DeepEqual(o.LastRun, runs[0]) {
			t.Errorf("last run: got %+v, want %+v", o.LastRun, runs[0])
		}
		if o.LastRun != nil && (o.LastRun.Totals.Cases != 3 || o.LastRun.Totals.Pending != 3) {
			t.Errorf("last run's totals: got %+v, want 3 pending", o.LastRun.Totals)
		}
	}
	check("alice", "")
	_, err := s.FindTaskOverview(c, "bob", task)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.FindTaskOverview(c, "alice", "no-such-task")
	wantCode(t, err, duet.CodeNotFound)

	cases, _, _, err := s.FindCases(c, duet.CaseFilter{TaskID: task})
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for range 2 {
		run := &duet.Run{TaskID: task, TriggeredBy: "alice", CallSource: duet.SourceCLI}
		var execs []*duet.Execution
		for _, k := range cases {
			execs = append(execs, &duet.Execution{CaseID: k.ID, CaseKey: k.Key, CaseTitle: k.Title, CaseVersion: k.Version, Steps: k.Steps})
		}
		if _, _, err := s.CreateRun(c, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
			t.Fatal(err)
		}
		last = run.ID
	}
	check("alice", last)
	check("", last)
	if err := s.ShareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	check("bob", last)
}
