package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

func newSchedule(taskID, owner, name string, next time.Time) *duet.Schedule {
	return &duet.Schedule{TaskID: taskID, Owner: owner, Name: name, Source: duet.ScheduleFromUser, Cron: "0 2 * * *", TimeZone: "Europe/Paris",
		Missed: duet.MissedSkip, Overlap: duet.OverlapSkip, NextFireAt: next}
}

// testSchedules: who may make, see and change a schedule; a suite's
// schedules follow the suite.
func testSchedules(t *testing.T, s duet.Store) {
	next := time.Date(2030, 1, 2, 1, 0, 0, 0, time.UTC)
	res := mustApply(t, s, "alice", suite("sched", "a"))
	task := res.Task.ID
	sc := newSchedule(task, "alice", "nightly", next)
	if err := s.CreateSchedule(ctx(t), sc); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.CreateSchedule(ctx(t), newSchedule(task, "alice", "nightly", next)), duet.CodeConflict)
	wantCode(t, s.CreateSchedule(ctx(t), newSchedule(task, "bob", "mine", next)), duet.CodeNotFound) // bob does not see the task
	bad := newSchedule(task, "alice", "both", next)
	bad.Every = time.Hour
	wantCode(t, s.CreateSchedule(ctx(t), bad), duet.CodeInvalidArgument)

	got, err := s.FindScheduleByID(ctx(t), "alice", sc.ID)
	if err != nil || got.NextFireAt != next || got.TimeZone != "Europe/Paris" || got.Paused || got.Owner != "alice" {
		t.Fatalf("FindScheduleByID: got %+v %v", got, err)
	}
	_, err = s.FindScheduleByID(ctx(t), "bob", sc.ID)
	wantCode(t, err, duet.CodeNotFound)
	if err := s.ShareTask(ctx(t), "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	bobs := newSchedule(task, "bob", "hourly", next)
	bobs.Cron, bobs.TimeZone, bobs.Every = "", "", time.Hour
	if err := s.CreateSchedule(ctx(t), bobs); err != nil {
		t.Fatal(err)
	}
	list, err := s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "bob", TaskID: task})
	if err != nil || len(list) != 2 || list[0].Name != "hourly" || list[0].Every != time.Hour {
		t.Fatalf("bob's list: got %+v %v", list, err)
	}
	if list, _ := s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "bob", Owner: "alice"}); len(list) != 1 || list[0].ID != sc.ID {
		t.Fatalf("filtered by owner: got %+v", list)
	}
	if list, _ := s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "carol"}); len(list) != 0 {
		t.Fatalf("carol sees %+v", list)
	}
	// bob sees alice's schedule but may not change it; alice owns the task
	// and may change bob's.
	_, err = s.SetSchedulePaused(ctx(t), "bob", sc.ID, true, "", time.Time{})
	wantCode(t, err, duet.CodePermissionDenied)
	wantCode(t, s.DeleteSchedule(ctx(t), "bob", sc.ID), duet.CodePermissionDenied)
	p, err := s.SetSchedulePaused(ctx(t), "alice", bobs.ID, true, "", time.Time{})
	if err != nil || !p.Paused {
		t.Fatalf("pause: got %+v %v", p, err)
	}
	resumeAt := next.Add(time.Hour)
	if p, err := s.SetSchedulePaused(ctx(t), "bob", bobs.ID, false, "", resumeAt); err != nil || p.Paused || !p.NextFireAt.Equal(resumeAt) {
		t.Fatalf("resume: got %+v %v", p, err)
	}
	if err := s.DeleteSchedule(ctx(t), "bob", bobs.ID); err != nil {
		t.Fatal(err)
	}

	// Due: only unpaused schedules at or before now; the earliest slot.
	due, earliest, err := s.DueSchedules(ctx(t), next.Add(-time.Second), 10)
	if err != nil || len(due) != 0 || !earliest.Equal(next) {
		t.Fatalf("before the slot: got %d due, earliest %v, %v", len(due), earliest, err)
	}
	due, _, err = s.DueSchedules(ctx(t), next, 10)
	if err != nil || len(due) != 1 || due[0].ID != sc.ID {
		t.Fatalf("at the slot: got %+v %v", due, err)
	}
	// Duet pauses it for a reason while the slot is still the one it saw.
	if ok, err := s.PauseScheduleFor(ctx(t), sc.ID, next.Add(time.Minute), "stale"); err != nil || ok {
		t.Fatalf("pause for another slot: got %v %v", ok, err)
	}
	if ok, err := s.PauseScheduleFor(ctx(t), sc.ID, next, "alice no longer has access"); err != nil || !ok {
		t.Fatalf("PauseScheduleFor: got %v %v", ok, err)
	}
	got, _ = s.FindScheduleByID(ctx(t), "", sc.ID)
	if !got.Paused || got.PausedReason != "alice no longer has access" {
		t.Fatalf("paused: got %+v", got)
	}
	if due, _, _ := s.DueSchedules(ctx(t), next, 10); len(due) != 0 {
		t.Fatalf("a paused schedule is due: %+v", due)
	}

	// A suite's schedules: made, kept, changed and removed with the suite.
	su := suite("sched", "a")
	su.Schedules = []*duet.Schedule{
		{Name: "nightly", Cron: "0 2 * * *", Missed: duet.MissedSkip, Overlap: duet.OverlapSkip, NextFireAt: next},
		{Name: "often", Every: 30 * time.Minute, Missed: duet.MissedRunOnce, Overlap: duet.OverlapQueue, NextFireAt: next},
	}
	wantCode(t, func() error { _, err := s.ApplySuite(ctx(t), "alice", su); return err }(), duet.CodeConflict) // alice has a "nightly" by hand
	su.Schedules[0].Name = "night"
	mustApply(t, s, "alice", su)
	suiteOnes, _ := s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "alice", TaskID: task})
	if len(suiteOnes) != 3 {
		t.Fatalf("after applying: got %+v", suiteOnes)
	}
	var often *duet.Schedule
	for _, x := range suiteOnes {
		if x.Name == "often" {
			often = x
		}
	}
	if often == nil || often.Source != duet.ScheduleFromSuite || often.Missed != duet.MissedRunOnce || often.Overlap != duet.OverlapQueue {
		t.Fatalf("suite schedule: got %+v", often)
	}
	wantCode(t, s.DeleteSchedule(ctx(t), "alice", often.ID), duet.CodeInvalidArgument)
	// Its state survives an unchanged apply; a new timing takes the new
	// next fire time; a schedule left out is removed.
	if ok, err := s.AdvanceSchedule(ctx(t), duet.ScheduleFire{ScheduleID: often.ID, Slot: next, Next: next.Add(30 * time.Minute)}, ""); err != nil || !ok {
		t.Fatalf("advance: %v %v", ok, err)
	}
	su.Schedules[1].NextFireAt = next.Add(24 * time.Hour)
	mustApply(t, s, "alice", su)
	if x, _ := s.FindScheduleByID(ctx(t), "alice", often.ID); !x.NextFireAt.Equal(next.Add(30 * time.Minute)) {
		t.Fatalf("unchanged suite schedule moved: %v", x.NextFireAt)
	}
	su.Schedules = su.Schedules[1:]
	su.Schedules[0].Every = time.Hour
	mustApply(t, s, "alice", su)
	if x, _ := s.FindScheduleByID(ctx(t), "alice", often.ID); x.Every != time.Hour || !x.NextFireAt.Equal(next.Add(24*time.Hour)) {
		t.Fatalf("changed suite schedule: %+v", x)
	}
	if list, _ := s.FindSchedules(ctx(t), duet.ScheduleFilter{Viewer: "alice", TaskID: task}); len(list) != 2 {
		t.Fatalf("the schedule left out of the suite stayed: %+v", list)
	}
}

// testScheduleClaimConcurrent: schedulers racing for one slot, each
// creating the slot's run with the claim in the run's transaction: exactly
// one run is made, the others get CONFLICT and leave nothing behind.
func testScheduleClaimConcurrent(t *testing.T, s duet.Store) {
	next := time.Date(2030, 1, 2, 1, 0, 0, 0, time.UTC)
	run0, execs0 := newRun(t, s, "alice")
	sc := newSchedule(run0.TaskID, "alice", "race", next)
	if err := s.CreateSchedule(ctx(t), sc); err != nil {
		t.Fatal(err)
	}
	fire := duet.ScheduleFire{ScheduleID: sc.ID, Slot: next, Next: next.Add(24 * time.Hour), RunSlot: next}
	const n = 8
	var wg sync.WaitGroup
	made := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			var execs []*duet.Execution
			for _, e := range execs0 {
				execs = append(execs, &duet.Execution{CaseID: e.CaseID, CaseKey: e.CaseKey, CaseTitle: e.CaseTitle, CaseVersion: e.CaseVersion, Steps: e.Steps})
			}
			f := fire
			run := &duet.Run{TaskID: run0.TaskID, TriggeredBy: "alice", CallSource: duet.SourceSchedule}
			if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: execs, Fire: &f}); err != nil {
				errs <- err
				return
			}
			made <- run.ID
		})
	}
	wg.Wait()
	close(made)
	close(errs)
	var ids []string
	for id := range made {
		ids = append(ids, id)
	}
	if len(ids) != 1 {
		t.Fatalf("%d schedulers made a run for one slot: %v", len(ids), ids)
	}
	for err := range errs {
		wantCode(t, err, duet.CodeConflict)
	}
	runs, _, err := s.FindRuns(ctx(t), duet.RunFilter{Viewer: "alice", TaskID: run0.TaskID, Limit: 100})
	if err != nil || len(runs) != 2 { // run0 and the slot's
		t.Fatalf("runs of the task: got %d %v, want 2", len(runs), err)
	}
	got, _ := s.FindScheduleByID(ctx(t), "alice", sc.ID)
	if !got.NextFireAt.Equal(fire.Next) || got.LastRunID != ids[0] || got.LastFireAt == nil || !got.LastFireAt.Equal(next) {
		t.Fatalf("schedule after the slot: got %+v", got)
	}
	// The slot moved: claiming it again, or skipping it, changes nothing.
	if ok, err := s.AdvanceSchedule(ctx(t), fire, "late"); err != nil || ok {
		t.Fatalf("advancing a claimed slot: got %v %v", ok, err)
	}
	again := fire
	again.Slot, again.Next = fire.Next, fire.Next.Add(24*time.Hour)
	if ok, err := s.AdvanceSchedule(ctx(t), again, "skipped"); err != nil || !ok {
		t.Fatalf("advancing the next slot: got %v %v", ok, err)
	}
	if got, _ := s.FindScheduleByID(ctx(t), "alice", sc.ID); got.LastError != "skipped" || !got.NextFireAt.Equal(again.Next) {
		t.Fatalf("after a skip: got %+v", got)
	}
}

// testRunOrigin: a run keeps the origin it was made with, and runs are
// found by its branch and commit.
func testRunOrigin(t *testing.T, s duet.Store) {
	run0, execs := newRun(t, s, "alice")
	o := &duet.RunOrigin{Commit: "abc123", Branch: "feature/pay", PullRequest: "https://git.example/pr/7", Pipeline: "https://ci.example/runs/9"}
	var ex []*duet.Execution
	for _, e := range execs {
		ex = append(ex, &duet.Execution{CaseID: e.CaseID, CaseKey: e.CaseKey, CaseTitle: e.CaseTitle, CaseVersion: e.CaseVersion, Steps: e.Steps})
	}
	run := &duet.Run{TaskID: run0.TaskID, TriggeredBy: "alice", CallSource: duet.SourceAPI, Origin: o}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: ex}); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindRunByID(ctx(t), "alice", run.ID)
	if err != nil || got.Origin == nil || *got.Origin != *o {
		t.Fatalf("origin: got %+v %v", got.Origin, err)
	}
	if got, _ := s.FindRunByID(ctx(t), "alice", run0.ID); got.Origin != nil {
		t.Fatalf("a run without an origin has %+v", got.Origin)
	}
	for _, f := range []duet.RunFilter{{Viewer: "alice", Branch: "feature/pay"}, {Viewer: "alice", Commit: "abc123"}, {Viewer: "alice", TaskID: run0.TaskID, Branch: "feature/pay", Limit: 1}} {
		if runs, _, err := s.FindRuns(ctx(t), f); err != nil || len(runs) != 1 || runs[0].ID != run.ID {
			t.Fatalf("FindRuns %+v: got %d runs, %v", f, len(runs), err)
		}
	}
	if runs, _, _ := s.FindRuns(ctx(t), duet.RunFilter{Viewer: "alice", Branch: "main"}); len(runs) != 0 {
		t.Fatalf("branch main: %d runs", len(runs))
	}
}

// testContractStore: the cases calling a server are found by its key, an
// alert concerns its case's current version, and a registration keeps the
// newest replaced catalogs.
func testContractStore(t *testing.T, s duet.Store) {
	su := suite("contracts", "a", "b")
	su.Cases[0].Steps = []duet.Step{{Index: 0, Kind: duet.StepMCPCall, Name: "call", MCP: &duet.MCPCallStep{ServerKey: "mcp_orders_0badcafe", ToolName: "query_order"}}}
	res := mustApply(t, s, "alice", su)
	cases, err := s.FindCasesCallingServer(ctx(t), "mcp_orders_0badcafe")
	if err != nil || len(cases) != 1 || cases[0].Key != "a" {
		t.Fatalf("FindCasesCallingServer: %+v %v", cases, err)
	}
	if other, _ := s.FindCasesCallingServer(ctx(t), "mcp_orders_0badcaf"); len(other) != 0 {
		t.Fatalf("a key's prefix matched: %+v", other)
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	alert := &duet.ContractAlert{TaskID: res.Task.ID, CaseID: cases[0].ID, CaseKey: "a", CaseTitle: "title a", CaseVersion: cases[0].Version,
		ServerKey: "mcp_orders_0badcafe", Tool: "query_order", Broken: true, Problems: []string{"p"}, Changes: []string{"c"}, DetectedAt: at}
	if err := s.SaveContractAlerts(ctx(t), []*duet.ContractAlert{alert}); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindContractAlerts(ctx(t), "alice", res.Task.ID)
	if err != nil || len(got) != 1 || !got[0].Broken || got[0].Problems[0] != "p" || !got[0].DetectedAt.Equal(at) || got[0].CaseTitle != "title a" {
		t.Fatalf("FindContractAlerts: %+v %v", got, err)
	}
	if got, _ := s.FindContractAlerts(ctx(t), "bob", ""); len(got) != 0 {
		t.Fatalf("bob sees alice's alerts: %+v", got)
	}
	// A new version of the case clears its alert.
	su.Cases[0].SourceHash = "h-a2"
	mustApply(t, s, "alice", su)
	if got, _ := s.FindContractAlerts(ctx(t), "alice", res.Task.ID); len(got) != 0 {
		t.Fatalf("the alert of an older version is shown: %+v", got)
	}

	reg := &duet.MCPServer{Owner: "alice", Name: "orders", URL: "https://orders.example/mcp", ServerKey: "mcp_orders_0badcafe"}
	if err := s.CreateMCPServer(ctx(t), reg, nil); err != nil {
		t.Fatal(err)
	}
	for i := range duet.MaxCatalogHistory + 2 {
		c := &duet.ArchivedCatalog{SyncedAt: at.Add(time.Duration(i) * time.Minute), Hash: fmt.Sprint(i), Tools: []*duet.MCPTool{{Name: fmt.Sprint("t", i)}}}
		if err := s.SaveCatalogHistory(ctx(t), reg.ID, c); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := s.FindCatalogHistory(ctx(t), reg.ID)
	if err != nil || len(hist) != duet.MaxCatalogHistory || hist[0].Hash != fmt.Sprint(duet.MaxCatalogHistory+1) || hist[0].Tools[0].Name != fmt.Sprint("t", duet.MaxCatalogHistory+1) {
		t.Fatalf("FindCatalogHistory: %d %v", len(hist), err)
	}
}
