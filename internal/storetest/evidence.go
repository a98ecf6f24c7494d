package storetest

import (
	"testing"

	"github.com/duet-test/duet"
)

// testTraceModes: a task's trace mode is kept and changed by applying its
// suite (an update of the task), and a run's choice is kept with the run.
func testTraceModes(t *testing.T, s duet.Store) {
	su := suite("traced", "a")
	su.Task.Trace = "on"
	res := mustApply(t, s, "alice", su)
	task, err := s.FindTaskByID(ctx(t), "alice", res.Task.ID)
	if err != nil || task.Trace != "on" {
		t.Fatalf("task trace: got %+v %v, want on", task, err)
	}
	su.Task.Trace = "off"
	again := mustApply(t, s, "alice", su)
	if again.TaskAction != duet.ApplyUpdated {
		t.Errorf("changing the trace mode: task %s, want updated", again.TaskAction)
	}
	if task, err = s.FindTaskByID(ctx(t), "", res.Task.ID); err != nil || task.Trace != "off" {
		t.Fatalf("task trace after the change: got %+v %v, want off", task, err)
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI, Trace: "on-first-retry"}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: "a", CaseTitle: "a", CaseVersion: 1, Steps: []duet.Step{step(0, "true")}}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindRunByID(ctx(t), "alice", run.ID)
	if err != nil || got.Trace != "on-first-retry" {
		t.Fatalf("run trace: got %+v %v", got, err)
	}
	claimed, err := s.ClaimRun(ctx(t), "w1", 30e9)
	if err != nil || claimed == nil || claimed.Trace != "on-first-retry" {
		t.Fatalf("claimed run trace: got %+v %v", claimed, err)
	}
}
