package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testSuiteSources: an apply with a source keeps it as its task's, in the
// apply's transaction (a source past the limit fails the whole apply: no
// task is made); an apply without one (the recorder's save of one case)
// leaves it; the next apply with one replaces it; each task has its own,
// and a task never applied from YAML has none.
func testSuiteSources(t *testing.T, s duet.Store) {
	su := suite("sourced", "a")
	su.Source = &duet.SuiteSource{Name: "shop.yaml", Source: "task: {name: sourced}\ncases: []\n"}
	res := mustApply(t, s, "alice", su)
	got, err := s.FindSuiteSource(ctx(t), res.Task.ID)
	if err != nil || got.Source != su.Source.Source || got.Name != "shop.yaml" || got.AppliedBy != "alice" || got.TaskID != res.Task.ID || got.UpdatedAt.IsZero() {
		t.Fatalf("the kept source: %+v %v", got, err)
	}
	if !got.UpdatedAt.Equal(res.Task.UpdatedAt.Truncate(time.Microsecond)) {
		t.Errorf("the source's time %v is not its apply's %v", got.UpdatedAt, res.Task.UpdatedAt)
	}
	mustApply(t, s, "alice", suite("sourced", "a", "b"))
	if again, err := s.FindSuiteSource(ctx(t), res.Task.ID); err != nil || again.Source != su.Source.Source {
		t.Fatalf("an apply without a source changed it: %+v %v", again, err)
	}
	next := suite("sourced", "a")
	next.Source = &duet.SuiteSource{Name: "suite.yaml", Source: "task: {name: sourced}\n# the second\ncases: []\n"}
	mustApply(t, s, "alice", next)
	if got, err := s.FindSuiteSource(ctx(t), res.Task.ID); err != nil || !strings.Contains(got.Source, "the second") || got.Name != "suite.yaml" {
		t.Fatalf("the next apply's source: %+v %v", got, err)
	}

	// A source made from a read before the save (Replaces) is kept only
	// while the source it was made from is: never over an apply between.
	kept, err := s.FindSuiteSource(ctx(t), res.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	stale := kept.UpdatedAt.Add(-time.Second)
	lost := suite("sourced", "a")
	lost.Source = &duet.SuiteSource{Name: "suite.yaml", Source: "task: {name: sourced}\n# merged into an older read\ncases: []\n", Replaces: &stale}
	mustApply(t, s, "alice", lost)
	if got, err := s.FindSuiteSource(ctx(t), res.Task.ID); err != nil || got.Source != kept.Source {
		t.Fatalf("a source made from an older read replaced the kept one: %+v %v", got, err)
	}
	merged := suite("sourced", "a")
	merged.Source = &duet.SuiteSource{Name: "suite.yaml", Source: "task: {name: sourced}\n# merged into the kept one\ncases: []\n", Replaces: &kept.UpdatedAt}
	mustApply(t, s, "alice", merged)
	if got, err := s.FindSuiteSource(ctx(t), res.Task.ID); err != nil || !strings.Contains(got.Source, "merged into the kept one") {
		t.Fatalf("a source made from the kept one was not kept: %+v %v", got, err)
	}

	other := mustApply(t, s, "bob", suite("sourced", "x"))
	_, err = s.FindSuiteSource(ctx(t), other.Task.ID)
	wantCode(t, err, duet.CodeNotFound)
	_, err = s.FindSuiteSource(ctx(t), "task_none")
	wantCode(t, err, duet.CodeNotFound)

	big := suite("too-big", "a")
	big.Source = &duet.SuiteSource{Name: "big.yaml", Source: strings.Repeat("#", duet.MaxSuiteSourceBytes+1)}
	_, err = s.ApplySuite(ctx(t), "alice", big)
	wantCode(t, err, duet.CodeTooLarge)
	if tasks, _, _, err := s.FindTasks(ctx(t), duet.TaskFilter{Viewer: "alice", Query: "too-big"}); err != nil || len(tasks) != 0 {
		t.Errorf("an apply whose source was refused left its task: %v %v", tasks, err)
	}
}
