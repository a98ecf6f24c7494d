package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testTaskOverview: FindTaskOverview is FindTaskByID, CountCases, the
// latest run of FindRuns and, for a viewer, FindContractAlerts and
// FindSchedules, read together — the same answers, the same
// NOT_FOUND for a task the viewer may not see.
func testTaskOverview(t *testing.T, s duet.Store) {
	c := ctx(t)
	res := mustApply(t, s, "alice", suite("overview-"+duet.NewID("x"), "a", "b", "c"))
	task := res.Task.ID
	var wantExtras int // alerts and schedules the task has
	check := func(viewer string, wantRun string) {
		t.Helper()
		o, err := s.FindTaskOverview(c, viewer, task)
		if err != nil {
			t.Fatalf("FindTaskOverview(%s): %v", viewer, err)
		}
		if viewer == "" {
			if len(o.Alerts) != 0 || len(o.Schedules) != 0 {
				t.Errorf("alerts and schedules without a viewer: %+v %+v", o.Alerts, o.Schedules)
			}
		} else {
			alerts, err := s.FindContractAlerts(c, viewer, task)
			if err != nil {
				t.Fatal(err)
			}
			scheds, err := s.FindSchedules(c, duet.ScheduleFilter{Viewer: viewer, TaskID: task})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Alerts) != wantExtras || !reflect.DeepEqual(o.Alerts, alerts) {
				t.Errorf("alerts: got %+v, want %d: %+v", o.Alerts, wantExtras, alerts)
			}
			if len(o.Schedules) != wantExtras || !reflect.DeepEqual(o.Schedules, scheds) {
				t.Errorf("schedules: got %+v, want %d: %+v", o.Schedules, wantExtras, scheds)
			}
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
	if err := s.CreateSchedule(c, newSchedule(task, "alice", "nightly", time.Date(2030, 1, 2, 1, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	alert := &duet.ContractAlert{TaskID: task, CaseID: cases[0].ID, CaseKey: cases[0].Key, CaseTitle: cases[0].Title, CaseVersion: cases[0].Version,
		ServerKey: "mcp_orders_0badcafe", Tool: "query_order", Broken: true, Problems: []string{"p"}, DetectedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.SaveContractAlerts(c, []*duet.ContractAlert{alert}); err != nil {
		t.Fatal(err)
	}
	wantExtras = 1
	check("alice", last)
	check("", last)
	if err := s.ShareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	check("bob", last)
}

// testReadTogether: FindTaskCases, FindRunPage and FindExecutionAndRun
// answer what their parts answer (FindTaskByID and FindCases,
// FindRunByID and FindExecutionPage, FindExecutionByID and FindRunByID),
// with the same NOT_FOUND for what the viewer may not see, and
// INVALID_ARGUMENT for a bad cursor of what they may.
func testReadTogether(t *testing.T, s duet.Store) {
	c := ctx(t)
	run, _ := newRun(t, s, "alice")
	task := run.TaskID

	// A task and its cases.
	f := duet.CaseFilter{TaskID: task, Limit: 1}
	gotT, gotC, gotNext, gotTotal, err := s.FindTaskCases(c, "alice", f)
	if err != nil {
		t.Fatal(err)
	}
	wantT, _ := s.FindTaskByID(c, "alice", task)
	wantC, wantNext, wantTotal, _ := s.FindCases(c, f)
	if !reflect.DeepEqual(gotT, wantT) || !reflect.DeepEqual(gotC, wantC) || gotNext != wantNext || gotTotal != wantTotal || gotTotal != 2 || len(gotC) != 1 {
		t.Errorf("FindTaskCases: got %+v %+v %q %d, want %+v %+v %q %d", gotT, gotC, gotNext, gotTotal, wantT, wantC, wantNext, wantTotal)
	}
	f.Cursor = gotNext
	_, gotC, gotNext, gotTotal, err = s.FindTaskCases(c, "alice", f)
	if err != nil || len(gotC) != 1 || gotC[0].Key != "b" || gotNext != "" || gotTotal != 2 {
		t.Errorf("FindTaskCases, second page: got %+v %q %d %v", gotC, gotNext, gotTotal, err)
	}
	_, _, _, _, err = s.FindTaskCases(c, "bob", duet.CaseFilter{TaskID: task})
	wantCode(t, err, duet.CodeNotFound)
	_, _, _, _, err = s.FindTaskCases(c, "bob", duet.CaseFilter{TaskID: task, Cursor: "!bad"})
	wantCode(t, err, duet.CodeNotFound)
	_, _, _, _, err = s.FindTaskCases(c, "alice", duet.CaseFilter{TaskID: task, Cursor: "!bad"})
	wantCode(t, err, duet.CodeInvalidArgument)

	// A run and a page of its executions.
	ef := duet.ExecutionFilter{RunID: run.ID, Limit: 1}
	gotR, gotE, gotNext, err := s.FindRunPage(c, "alice", ef)
	if err != nil {
		t.Fatal(err)
	}
	wantR, _ := s.FindRunByID(c, "alice", run.ID)
	wantE, wantNext, _ := s.FindExecutionPage(c, ef)
	if !reflect.DeepEqual(gotR, wantR) || !reflect.DeepEqual(gotE, wantE) || gotNext != wantNext || len(gotE) != 1 || gotNext == "" {
		t.Errorf("FindRunPage: got %+v %+v %q, want %+v %+v %q", gotR, gotE, gotNext, wantR, wantE, wantNext)
	}
	_, _, _, err = s.FindRunPage(c, "bob", ef)
	wantCode(t, err, duet.CodeNotFound)
	_, _, _, err = s.FindRunPage(c, "bob", duet.ExecutionFilter{RunID: run.ID, Cursor: "!bad"})
	wantCode(t, err, duet.CodeNotFound)
	_, _, _, err = s.FindRunPage(c, "alice", duet.ExecutionFilter{RunID: run.ID, Cursor: "!bad"})
	wantCode(t, err, duet.CodeInvalidArgument)

	// An execution and its run.
	x, r, err := s.FindExecutionAndRun(c, "alice", gotE[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	wantX, _ := s.FindExecutionByID(c, "alice", gotE[0].ID)
	if !reflect.DeepEqual(x, wantX) || !reflect.DeepEqual(r, wantR) {
		t.Errorf("FindExecutionAndRun: got %+v %+v, want %+v %+v", x, r, wantX, wantR)
	}
	_, _, err = s.FindExecutionAndRun(c, "bob", gotE[0].ID)
	wantCode(t, err, duet.CodeNotFound)
	_, _, err = s.FindExecutionAndRun(c, "alice", "no-such-execution")
	wantCode(t, err, duet.CodeNotFound)
}
