package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// testLanguage: what the tester's language stores, alike on both engines —
// a task's environments and hooks (and who wrote them), a case's data row
// and its executions', a run's environment and hook results with the
// variables beforeAll saved, flow steps nested in steps, and users'
// sealed secrets (each user's own).
func testLanguage(t *testing.T, s duet.Store) {
	su := suite("lang-"+duet.NewID("x"), "a")
	su.Task.Environments = map[string]*duet.Environment{"staging": {BaseURL: "http://s.test", Vars: map[string]any{"tier": "s"}}}
	su.Task.DefaultEnvironment = "staging"
	su.Task.BeforeAll = []duet.Step{step(0, "true")}
	su.Task.AfterAll = []duet.Step{step(0, "1 == 1")}
	c := su.Cases[0]
	c.Row = map[string]any{"user": "alice", "n": 2.0}
	c.Steps = []duet.Step{{Index: 0, Kind: duet.StepRepeat, Name: "repeat", Loop: &duet.LoopStep{Mode: duet.LoopTimes, Times: 2, Max: 2,
		Steps: []duet.Step{{Index: 0, Kind: duet.StepIf, Name: "if", If: &duet.IfStep{Condition: duet.Condition{Expr: "row.n > 1"}, Then: []duet.Step{step(0, "true")}}}}}}}
	res := mustApply(t, s, "alice", su)
	task, err := s.FindTaskByID(ctx(t), "alice", res.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.DefaultEnvironment != "staging" || task.Environments["staging"].Vars["tier"] != "s" || len(task.BeforeAll) != 1 || len(task.AfterAll) != 1 || task.HooksBy != "alice" {
		t.Fatalf("task: got %+v", task)
	}
	cases, _, _, err := s.FindCases(ctx(t), duet.CaseFilter{TaskID: task.ID})
	if err != nil || len(cases) != 1 {
		t.Fatalf("cases: %v %v", cases, err)
	}
	got := cases[0]
	if got.Row["user"] != "alice" || got.Steps[0].Loop == nil || got.Steps[0].Loop.Steps[0].If == nil || got.Steps[0].Loop.Steps[0].If.Then[0].Assert == nil {
		t.Fatalf("case: got %+v", got)
	}

	run := &duet.Run{TaskID: task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI, Environment: "staging"}
	x := &duet.Execution{CaseID: got.ID, CaseKey: got.Key, CaseTitle: got.Title, CaseVersion: got.Version, Steps: got.Steps, Row: got.Row}
	if _, _, err := s.CreateRun(ctx(t), duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimRunByID(ctx(t), run.ID, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l := duet.LeaseOf(claimed, "w1")
	hooks := []*duet.StepResult{{Index: 0, Kind: duet.StepAssert, Name: "true", Status: duet.StatusPassed, Hook: duet.HookBeforeAll}}
	if err := s.SaveRunHooks(ctx(t), l, hooks, map[string]any{"fixture": map[string]any{"id": "f1"}}); err != nil {
		t.Fatal(err)
	}
	execs, err := s.FindExecutions(ctx(t), run.ID)
	if err != nil || len(execs) != 1 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	nested := &duet.StepResult{Index: 0, Kind: duet.StepRepeat, Name: "repeat", Status: duet.StatusPassed, Iterations: 2,
		Children: duet.StepResults{{Index: 0, Kind: duet.StepIf, Status: duet.StatusPassed, Iteration: 2, Branch: "then",
			Children: duet.StepResults{{Index: 0, Kind: duet.StepAssert, Status: duet.StatusPassed, Iteration: 2}}}}}
	if err := s.SaveStepResult(ctx(t), l, execs[0].ID, nested, nil); err != nil {
		t.Fatal(err)
	}
	gotRun, err := s.FindRunByID(ctx(t), "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if gotRun.Environment != "staging" || len(gotRun.Hooks) != 1 || gotRun.Hooks[0].Hook != duet.HookBeforeAll {
		t.Fatalf("run: environment %q hooks %+v", gotRun.Environment, gotRun.Hooks)
	}
	if f, _ := gotRun.HookVars["fixture"].(map[string]any); f["id"] != "f1" {
		t.Fatalf("run hook variables: got %v", gotRun.HookVars)
	}
	execs, _ = s.FindExecutions(ctx(t), run.ID)
	if execs[0].Row["user"] != "alice" || len(execs[0].Results) != 1 {
		t.Fatalf("execution: got %+v", execs[0])
	}
	r := execs[0].Results[0]
	if r.Iterations != 2 || len(r.Children) != 1 || r.Children[0].Branch != "then" || r.Children[0].Iteration != 2 || len(r.Children[0].Children) != 1 {
		t.Fatalf("nested results: got %+v", r)
	}
	// A lease lost: the hooks are not written.
	wantCode(t, s.SaveRunHooks(ctx(t), duet.LeaseOf(claimed, "w2"), nil, nil), duet.CodeLeaseLost)

	// Secrets: each user's own, replaced in place, listed without values.
	sec := &duet.Secret{User: "alice", Name: "PW", Ciphertext: []byte("ct-1")}
	if a, err := s.SaveSecret(ctx(t), sec); err != nil || a != duet.ApplyCreated {
		t.Fatalf("save: %v %v", a, err)
	}
	if a, err := s.SaveSecret(ctx(t), &duet.Secret{User: "alice", Name: "PW", Ciphertext: []byte("ct-2")}); err != nil || a != duet.ApplyUpdated {
		t.Fatalf("replace: %v %v", a, err)
	}
	if _, err := s.SaveSecret(ctx(t), &duet.Secret{User: "bob", Name: "PW", Ciphertext: []byte("bob")}); err != nil {
		t.Fatal(err)
	}
	_, err = s.SaveSecret(ctx(t), &duet.Secret{User: "alice", Name: "not a name", Ciphertext: []byte("x")})
	wantCode(t, err, duet.CodeInvalidArgument)
	_, err = s.SaveSecret(ctx(t), &duet.Secret{User: "alice", Name: "EMPTY"})
	wantCode(t, err, duet.CodeInvalidArgument)
	found, err := s.FindSecrets(ctx(t), "alice", []string{"PW", "NOPE"})
	if err != nil || len(found) != 1 || !bytes.Equal(found[0].Ciphertext, []byte("ct-2")) {
		t.Fatalf("find: %+v %v", found, err)
	}
	list, err := s.ListSecrets(ctx(t), "alice")
	if err != nil || len(list) != 1 || list[0].Name != "PW" || list[0].Ciphertext != nil {
		t.Fatalf("list: %+v %v", list, err)
	}
	// Rewrap: all or nothing.
	boom := errors.New("boom")
	if _, _, err := s.RewrapSecrets(ctx(t), func(x *duet.Secret) ([]byte, error) {
		if x.User == "bob" {
			return nil, boom
		}
		return []byte("new"), nil
	}); !errors.Is(err, boom) && duet.ErrorMessage(err) != "boom" {
		t.Fatalf("rewrap error: got %v", err)
	}
	if found, _ := s.FindSecrets(ctx(t), "alice", []string{"PW"}); !bytes.Equal(found[0].Ciphertext, []byte("ct-2")) {
		t.Fatalf("a failed rewrap changed alice's secret: %q", found[0].Ciphertext)
	}
	if _, _, err := s.RewrapSecrets(ctx(t), func(x *duet.Secret) ([]byte, error) {
		if x.User == "bob" {
			return nil, nil // kept
		}
		return []byte("new"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if found, _ := s.FindSecrets(ctx(t), "alice", []string{"PW"}); !bytes.Equal(found[0].Ciphertext, []byte("new")) {
		t.Fatalf("rewrap: got %q", found[0].Ciphertext)
	}
	if err := s.DeleteSecret(ctx(t), "alice", "PW"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteSecret(ctx(t), "alice", "PW"), duet.CodeNotFound)
	if found, _ := s.FindSecrets(ctx(t), "bob", []string{"PW"}); len(found) != 1 {
		t.Fatalf("deleting alice's secret touched bob's: %+v", found)
	}
}
