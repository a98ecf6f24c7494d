package catalog

import (
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestRunStateBelowOneWhileACaseRuns: a running case whose every step has
// its result is not done until its verdict is written, so the run's
// progress stays below its total until then (start_test_run's
// notifications said 1.0 with "running case 1/1" in that window), and it
// reaches the total when the case is final.
func TestRunStateBelowOneWhileACaseRuns(t *testing.T) {
	now := time.Now()
	started := now.Add(-time.Second)
	x := &duet.Execution{
		Status:    duet.StatusRunning,
		CaseTitle: "one",
		StartedAt: &started,
		Steps:     []duet.Step{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}},
	}
	run := &duet.Run{ID: "r1", Status: duet.StatusRunning}
	prev := -1.0
	for n := range 3 {
		x.Results = nil
		for i := range n {
			x.Results = append(x.Results, &duet.StepResult{Index: i, Status: duet.StatusPassed, FinishedAt: &now})
		}
		p := runState(run, []*duet.Execution{x}, now)
		if p.progress >= 1 || p.progress <= prev {
			t.Errorf("%d of 2 steps ended, case running: progress %v after %v, want it rising and below 1", n, p.progress, prev)
		}
		prev = p.progress
	}
	x.Status = duet.StatusPassed
	if p := runState(run, []*duet.Execution{x}, now); p.progress != 1 {
		t.Errorf("case passed: progress %v, want 1", p.progress)
	}
}
