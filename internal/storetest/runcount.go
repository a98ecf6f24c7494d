package storetest

import (
	"testing"

	"github.com/duet-test/duet"
)

// testRunCounts: CountRuns counts what FindRuns pages through, by the
// same filter (viewer, task, status), whatever the cursor and limit.
func testRunCounts(t *testing.T, s duet.Store) {
	mine, execs := newRun(t, s, "alice")
	for range 2 {
		run := &duet.Run{TaskID: mine.TaskID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
		again := make([]*duet.Execution, len(execs))
		for i, x := range execs {
			again[i] = &duet.Execution{CaseID: x.CaseID, CaseKey: x.CaseKey, CaseTitle: x.CaseTitle, CaseVersion: x.CaseVersion, Steps: x.Steps}
		}
		if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: again}); err != nil {
			t.Fatal(err)
		}
	}
	shared, _ := newRun(t, s, "alice")
	if err := s.ShareTask(ctx(t), "alice", shared.TaskID, "bob"); err != nil {
		t.Fatal(err)
	}
	newRun(t, s, "carol")
	// The runs of mine's task, oldest first: a run's number is how many
	// of them there are up to it.
	var order []string
	for f := (duet.RunFilter{Viewer: "alice", TaskID: mine.TaskID, Limit: 1}); ; {
		runs, next, err := s.FindRuns(ctx(t), f)
		if err != nil {
			t.Fatal(err)
		}
		order = append([]string{runs[0].ID}, order...)
		if next == "" {
			break
		}
		f.Cursor = next
	}
	if len(order) != 3 || order[0] != mine.ID {
		t.Fatalf("the task's runs, oldest first: %v (first %s)", order, mine.ID)
	}
	for i, id := range order {
		for _, viewer := range []string{"alice", ""} {
			if n, err := s.CountRuns(ctx(t), duet.RunFilter{Viewer: viewer, TaskID: mine.TaskID, UpTo: id}); err != nil || n != i+1 {
				t.Errorf("CountRuns up to the run %d of its task as %q: %d %v", i+1, viewer, n, err)
			}
		}
		if n, err := s.CountRuns(ctx(t), duet.RunFilter{Viewer: "bob", TaskID: mine.TaskID, UpTo: id}); err != nil || n != 0 {
			t.Errorf("CountRuns as bob, who cannot see the task: %d %v", n, err)
		}
	}
	if _, err := s.RequestCancel(ctx(t), "alice", mine.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    duet.RunFilter
		want int
	}{
		{duet.RunFilter{Viewer: "alice"}, 4},
		{duet.RunFilter{Viewer: "alice", Limit: 1, Cursor: ""}, 4},
		{duet.RunFilter{Viewer: "alice", TaskID: mine.TaskID}, 3},
		{duet.RunFilter{Viewer: "alice", Status: duet.StatusQueued}, 3},
		{duet.RunFilter{Viewer: "alice", TaskID: mine.TaskID, Status: duet.StatusCancelled}, 1},
		{duet.RunFilter{Viewer: "bob"}, 1},
		{duet.RunFilter{Viewer: "bob", TaskID: mine.TaskID}, 0},
		{duet.RunFilter{Viewer: "mallory"}, 0},
		{duet.RunFilter{}, 5},
	} {
		n, err := s.CountRuns(ctx(t), c.f)
		if err != nil || n != c.want {
			t.Errorf("CountRuns(%+v): got %d %v, want %d", c.f, n, err, c.want)
		}
		// The pages FindRuns returns add up to the count.
		seen, f := 0, c.f
		f.Limit = 1
		for {
			runs, next, err := s.FindRuns(ctx(t), f)
			if err != nil {
				t.Fatal(err)
			}
			seen += len(runs)
			if next == "" {
				break
			}
			f.Cursor = next
		}
		if seen != c.want {
			t.Errorf("FindRuns(%+v) pages through %d runs, CountRuns says %d", c.f, seen, c.want)
		}
	}
}
