package api_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// TestSaveCaseChangesOnlyThatCase: the recorder's save, for the task's
// owner, adds a case through the apply path and leaves the task's other
// cases (their versions), its schedule and its sharing as they were; the
// same key again is a new version; a case that does not compile is
// INVALID_ARGUMENT at its line; for a user the task is shared with it is
// a draft of theirs; for anyone else the task is NOT_FOUND.
func TestSaveCaseChangesOnlyThatCase(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	svc := e.App.API
	alice := duet.Caller{UserID: "alice", Source: duet.SourceWeb}
	src := "task:\n  name: shop\n  baseURL: http://127.0.0.1:9\n  sharedWith: [bob]\n  schedule:\n    - {name: nightly, cron: \"0 2 * * *\"}\n" +
		"cases:\n  - key: a\n    title: A\n    steps:\n      - set: {x: '1'}\n  - key: b\n    title: B\n    steps:\n      - set: {x: '2'}\n"
	applied, err := svc.ApplySuite(t.Context(), alice, api.ApplyIn{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	taskID := applied.Task.ID
	before, _, _, err := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: taskID})
	if err != nil || len(before) != 2 {
		t.Fatalf("cases: %v %v", before, err)
	}
	saved, err := svc.SaveCase(t.Context(), alice, api.SaveCaseIn{TaskID: taskID, Source: "key: rec\ntitle: Recorded\nsteps:\n  - open: /login\n"})
	if err != nil || saved.Action != duet.ApplyCreated || saved.Version != 1 || saved.Draft {
		t.Fatalf("save: %+v %v", saved, err)
	}
	after, _, _, err := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: taskID})
	if err != nil || len(after) != 3 {
		t.Fatalf("cases after: %d %v, want 3", len(after), err)
	}
	for _, c := range after {
		for _, b := range before {
			if c.Key == b.Key && (c.Version != b.Version || c.Status != duet.CaseActive) {
				t.Errorf("case %s changed: v%d %s, was v%d", c.Key, c.Version, c.Status, b.Version)
			}
		}
	}
	scheds, err := e.App.Store.FindSchedules(t.Context(), duet.ScheduleFilter{Viewer: "alice", TaskID: taskID})
	if err != nil || len(scheds) != 1 || scheds[0].Name != "nightly" {
		t.Errorf("the schedule after a save: %v %v", scheds, err)
	}
	task, err := e.App.Store.FindTaskByID(t.Context(), "alice", taskID)
	if err != nil || len(task.SharedWith) == 0 {
		t.Errorf("the task's sharing after a save: %+v %v", task, err)
	}
	again, err := svc.SaveCase(t.Context(), alice, api.SaveCaseIn{TaskID: taskID, Source: "key: rec\ntitle: Recorded\nsteps:\n  - open: /login\n  - assertURL: login\n"})
	if err != nil || again.Version != 2 || again.CaseID != saved.CaseID || again.Action != duet.ApplyUpdated {
		t.Errorf("the same key again: %+v %v, want version 2 of the case", again, err)
	}
	_, err = svc.SaveCase(t.Context(), alice, api.SaveCaseIn{TaskID: taskID, Source: "key: bad\ntitle: Bad\nsteps:\n  - clack: x\n"})
	if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(duet.ErrorMessage(err), "4:") {
		t.Errorf("a case that does not compile: %v", err)
	}
	bobs, err := svc.SaveCase(t.Context(), duet.Caller{UserID: "bob", Source: duet.SourceWeb}, api.SaveCaseIn{TaskID: taskID, Source: "key: bobs\ntitle: Bob's\nsteps:\n  - open: /\n"})
	if err != nil || !bobs.Draft {
		t.Fatalf("bob's save: %+v %v, want a draft", bobs, err)
	}
	if c, err := e.App.Store.FindCaseByID(t.Context(), "alice", bobs.CaseID); err != nil || c.Status != duet.CaseDraft || c.CreatedBy != "bob" {
		t.Errorf("bob's case: %+v %v", c, err)
	}
	if _, err := svc.SaveCase(t.Context(), duet.Caller{UserID: "root", Source: duet.SourceWeb}, api.SaveCaseIn{TaskID: taskID, Source: "key: x\ntitle: X\nsteps:\n  - open: /\n"}); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("someone the task is not shared with: %v, want NOT_FOUND", err)
	}
}
