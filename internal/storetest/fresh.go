package storetest

import (
	"testing"

	"github.com/duet-test/duet"
)

// testFreshAcrossHandles: the reads every governed call repeats (a token by
// hash, a task as its viewer sees it, its case count, its latest run) see
// a change made through another handle — another process, another
// instance — at the next read, however often they were read before: a
// revoked token, an unshared task, a member removed from a team, a case
// added, a run started. An engine that caches these reads must invalidate
// them at once (internal/sqlite's cache_epoch); one that does not cache
// passes as it is. Values handed out are the caller's: changing one does
// not change the next read.
func testFreshAcrossHandles(t *testing.T, a duet.Store, another func() duet.Store) {
	b := another()
	c := ctx(t)
	warm := func(read func() error) {
		t.Helper()
		for range 3 {
			if err := read(); err != nil {
				t.Fatalf("before the change: %v", err)
			}
		}
	}
	wantCode := func(what string, err error, code duet.Code) {
		t.Helper()
		if duet.ErrorCode(err) != code {
			t.Fatalf("%s after the change: got %v, want %s", what, err, code)
		}
	}

	// A revoked token.
	tok := &duet.Token{UserID: "alice", Name: "ci", Hash: "hash-" + duet.NewID("h")}
	if err := a.CreateToken(c, tok); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTokenByHash(c, tok.Hash); return err })
	if err := b.DeleteToken(c, "alice", tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err := a.FindTokenByHash(c, tok.Hash)
	wantCode("a revoked token", err, duet.CodeUnauthenticated)

	// An unshared task.
	res := mustApply(t, a, "alice", suite("fresh", "a", "b"))
	task := res.Task.ID
	if err := a.ShareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTaskByID(c, "bob", task); return err })
	got, _ := a.FindTaskByID(c, "bob", task)
	got.SharedWith[0] = "mallory"
	got.Name = "changed by the caller"
	again, err := a.FindTaskByID(c, "bob", task)
	if err != nil || again.Name != "fresh" || len(again.SharedWith) != 1 || again.SharedWith[0] != "bob" {
		t.Fatalf("a value handed out was changed in the store's hands: got %+v, %v", again, err)
	}
	if err := b.UnshareTask(c, "alice", task, "bob"); err != nil {
		t.Fatal(err)
	}
	_, err = a.FindTaskByID(c, "bob", task)
	wantCode("an unshared task", err, duet.CodeNotFound)

	// In one read scope, a write through the same handle takes effect
	// for the reads after it.
	sc := duet.WithReadScope(c)
	if err := a.ShareTask(c, "alice", task, "dave"); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTaskByID(sc, "dave", task); return err })
	if err := a.UnshareTask(sc, "alice", task, "dave"); err != nil {
		t.Fatal(err)
	}
	_, err = a.FindTaskByID(sc, "dave", task)
	wantCode("a task unshared in the same read scope", err, duet.CodeNotFound)

	// A member removed from a team the task is shared with.
	if _, err := a.CreateTeam(c, "alice", "fresh-qa"); err != nil {
		t.Fatal(err)
	}
	if err := a.AddTeamMember(c, "alice", "fresh-qa", "carol"); err != nil {
		t.Fatal(err)
	}
	if err := a.ShareTask(c, "alice", task, "team:fresh-qa"); err != nil {
		t.Fatal(err)
	}
	warm(func() error { _, err := a.FindTaskByID(c, "carol", task); return err })
	if err := b.RemoveTeamMember(c, "alice", "fresh-qa", "carol"); err != nil {
		t.Fatal(err)
	}
	_, err = a.FindTaskByID(c, "carol", task)
	wantCode("a member removed from the team", err, duet.CodeNotFound)

	// A case added; a run started.
	warm(func() error { _, err := a.CountCases(c, task); return err })
	lastRun := func() []*duet.Run {
		runs, _, err := a.FindRuns(c, duet.RunFilter{Viewer: "alice", TaskID: task, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	for range 3 {
		if n := len(lastRun()); n != 0 {
			t.Fatalf("got %d runs, want none", n)
		}
	}
	mustApply(t, b, "alice", suite("fresh", "a", "b", "c"))
	if n, err := a.CountCases(c, task); err != nil || n != 3 {
		t.Fatalf("the case count after a case was added: got %d, %v, want 3", n, err)
	}
	cases, _, _, err := b.FindCases(c, duet.CaseFilter{TaskID: task})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: task, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, cs := range cases {
		execs = append(execs, &duet.Execution{CaseID: cs.ID, CaseKey: cs.Key, CaseTitle: cs.Title, CaseVersion: cs.Version, Steps: cs.Steps})
	}
	if _, _, err := b.CreateRun(c, duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	runs := lastRun()
	if len(runs) != 1 || runs[0].ID != run.ID || runs[0].Totals.Cases != 3 {
		t.Fatalf("the latest run after a run was started: got %+v, want %s with 3 cases", runs, run.ID)
	}
	runs[0].ErrorMessage = "changed by the caller"
	if again := lastRun(); again[0].ErrorMessage != "" {
		t.Fatalf("a run handed out was changed in the store's hands: %q", again[0].ErrorMessage)
	}
}
