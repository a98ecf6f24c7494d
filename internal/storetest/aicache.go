package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testAIPlans: the plans of acting AI steps are written only under the
// lease of the run that verified them, one per step hash and fingerprint
// (a newer one replaces it), at most MaxAIPlansPerStep per step; the
// worker finds them by key, people by the case's visibility; only the
// task's owner clears them.
func testAIPlans(t *testing.T, s duet.Store) {
	res := mustApply(t, s, "alice", suite("ai-cache", "a"))
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: res.Cases[0].ID, CaseKey: "a", CaseTitle: "a", CaseVersion: 1, Steps: []duet.Step{step(0, "true")}}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimRunByID(ctx(t), run.ID, "w", time.Minute)
	if err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	l := duet.LeaseOf(c, "w")
	if err := s.StartExecution(ctx(t), l, x); err != nil {
		t.Fatal(err)
	}
	key := duet.AIPlanKey{TaskID: res.Task.ID, CaseID: res.Cases[0].ID, CaseVersion: 1, StepIndex: 2}
	plan := func(fp, name string) *duet.AIPlan {
		return &duet.AIPlan{AIPlanKey: key, StepHash: "h1", Fingerprint: fp, RunID: run.ID, ExecutionID: x.ID, CreatedBy: "alice",
			Actions: []duet.AIAction{{Do: "click", Locator: &duet.Locator{Role: "button", Name: name, Exact: true}, Region: fp}}}
	}
	if got, err := s.FindAIPlans(ctx(t), key, "h1"); err != nil || len(got) != 0 {
		t.Fatalf("no plans yet: %v %v", got, err)
	}
	p1 := plan("f1", "Add to cart")
	if err := s.SaveAIPlan(ctx(t), l, p1); err != nil || p1.ID == "" {
		t.Fatalf("save: %v %+v", err, p1)
	}
	got, err := s.FindAIPlans(ctx(t), key, "h1")
	if err != nil || len(got) != 1 || got[0].Actions[0].Locator.Name != "Add to cart" || !got[0].Actions[0].Locator.Exact || got[0].CreatedBy != "alice" || got[0].Fingerprint != "f1" {
		t.Fatalf("found: %+v %v", got, err)
	}
	if other, _ := s.FindAIPlans(ctx(t), key, "h2"); len(other) != 0 {
		t.Errorf("another step hash found %d plans", len(other))
	}
	// The same fingerprint again replaces the plan; another adds one.
	if err := s.SaveAIPlan(ctx(t), l, plan("f1", "Add to basket")); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveAIPlan(ctx(t), l, plan("f2", "Buy")); err != nil {
		t.Fatal(err)
	}
	got, _ = s.FindAIPlans(ctx(t), key, "h1")
	if len(got) != 2 {
		t.Fatalf("plans: %d, want 2", len(got))
	}
	for _, p := range got {
		if p.Fingerprint == "f1" && p.Actions[0].Locator.Name != "Add to basket" {
			t.Errorf("f1 was not replaced: %+v", p.Actions[0].Locator)
		}
	}
	if err := s.UseAIPlan(ctx(t), l, got[1].ID); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.FindAIPlans(ctx(t), key, "h1"); again[0].ID != got[1].ID || again[0].Hits != 1 {
		t.Errorf("the plan just used is not first, or not counted: %+v", again[0])
	}
	// At most MaxAIPlansPerStep per step.
	for i := range duet.MaxAIPlansPerStep + 2 {
		if err := s.SaveAIPlan(ctx(t), l, plan(fmt.Sprintf("g%d", i), "Buy")); err != nil {
			t.Fatal(err)
		}
	}
	if all, _ := s.FindCaseAIPlans(ctx(t), "alice", res.Cases[0].ID); len(all) != duet.MaxAIPlansPerStep {
		t.Errorf("a step keeps %d plans, want %d", len(all), duet.MaxAIPlansPerStep)
	}
	// Fenced: a lost lease, another run's plan, a plan without actions.
	stale := l
	stale.Token++
	if err := s.SaveAIPlan(ctx(t), stale, plan("f3", "x")); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Errorf("a lost lease's plan: %v", err)
	}
	if err := s.UseAIPlan(ctx(t), stale, got[0].ID); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Errorf("a lost lease's replay: %v", err)
	}
	foreign := plan("f3", "x")
	foreign.RunID = "run_other"
	if err := s.SaveAIPlan(ctx(t), l, foreign); duet.ErrorCode(err) != duet.CodeLeaseLost {
		t.Errorf("another run's plan: %v", err)
	}
	empty := plan("f3", "x")
	empty.Actions = nil
	if err := s.SaveAIPlan(ctx(t), l, empty); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("a plan without actions: %v", err)
	}
	// People: by the case's visibility; clearing: the owner only.
	if _, err := s.FindCaseAIPlans(ctx(t), "mallory", res.Cases[0].ID); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("mallory reads alice's plans: %v", err)
	}
	if _, err := s.ClearAIPlans(ctx(t), "mallory", res.Task.ID, ""); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("mallory clears alice's plans: %v", err)
	}
	if n, err := s.ClearAIPlans(ctx(t), "alice", res.Task.ID, "case_none"); err != nil || n != 0 {
		t.Errorf("clearing another case: %d %v", n, err)
	}
	if n, err := s.ClearAIPlans(ctx(t), "alice", res.Task.ID, res.Cases[0].ID); err != nil || n != duet.MaxAIPlansPerStep {
		t.Errorf("clearing the case: %d %v", n, err)
	}
	if left, _ := s.FindAIPlans(ctx(t), key, "h1"); len(left) != 0 {
		t.Errorf("%d plans left after clearing", len(left))
	}
}
