package api_test

import (
	"encoding/json"
	"net/http"
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

// TestValidateOverREST: POST /api/v1/tasks/validate answers a suite's
// problems at their lines and columns (200, valid false), a good suite
// as valid, stores nothing, and is audited as validateSuite with
// callSource api; a source past the limit is TOO_LARGE.
func TestValidateOverREST(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	bad := "task: {name: t, baseURL: http://127.0.0.1:9}\ncases:\n  - title: c\n    steps:\n      - open: /\n      - clack: x\n"
	status, body, _ := e.Call("alice", "POST", "/api/v1/tasks/validate", map[string]any{"source": bad})
	var v api.Validation
	if err := json.Unmarshal(body, &v); err != nil || status != http.StatusOK {
		t.Fatalf("validate: %d %s %v", status, body, err)
	}
	if v.Valid || len(v.Problems) == 0 || v.Problems[0].Line != 6 || v.Problems[0].Col < 1 || !strings.Contains(v.Problems[0].Message, "clack") {
		t.Errorf("the problems: %+v, want clack at line 6", v)
	}
	good := strings.Replace(bad, "clack: x", "assertURL: /", 1)
	status, body, _ = e.Call("alice", "POST", "/api/v1/tasks/validate", map[string]any{"source": good})
	if err := json.Unmarshal(body, &v); err != nil || status != http.StatusOK || !v.Valid || len(v.Problems) != 0 {
		t.Errorf("a good suite: %d %s", status, body)
	}
	if tasks, _, _, _ := e.App.Store.FindTasks(t.Context(), duet.TaskFilter{Viewer: "alice"}); len(tasks) != 0 {
		t.Errorf("validating stored a task: %v", tasks)
	}
	if status, body, _ := e.Call("alice", "POST", "/api/v1/tasks/validate", map[string]any{"source": strings.Repeat("#", api.MaxSuiteBytes+1)}); status != http.StatusRequestEntityTooLarge && !strings.Contains(string(body), "TOO_LARGE") {
		t.Errorf("a suite past the limit: %d %.200s", status, body)
	}
	if status, body, _ := e.Call("alice", "POST", "/api/v1/tasks/validate", map[string]any{"source": good, "Source": good}); status != http.StatusBadRequest {
		t.Errorf("a key twice, in two cases: %d %.200s, want 400", status, body)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Method == "validateSuite" && r.CallSource == duet.SourceAPI {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d validateSuite audit records with callSource api, want at least 2", n)
	}
}

// TestSuiteSourceIsTheOwners: an apply keeps its YAML; the owner reads it
// back as written (comments too) over REST, with the case the recorder
// saved since merged in (not listed as changed); a user the task is shared with is
// PERMISSION_DENIED, anyone else (root) NOT_FOUND; a dry run keeps nothing; the
// next apply's source replaces it.
func TestSuiteSourceIsTheOwners(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	src := "# the shop's suite\ntask: {name: shop, baseURL: 'http://127.0.0.1:9', sharedWith: [bob]}\ncases:\n  - key: a\n    title: A\n    steps:\n      - set: {x: '1'}\n"
	status, body, _ := e.Call("alice", "POST", "/api/v1/tasks", map[string]any{"source": src})
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("apply: %d %s", status, body)
	}
	var applied duet.ApplyResult
	json.Unmarshal(body, &applied)
	path := "/api/v1/tasks/" + applied.Task.ID + "/source"
	var got api.SuiteSourceOut
	status, body, _ = e.Call("alice", "GET", path, nil)
	if err := json.Unmarshal(body, &got); err != nil || status != http.StatusOK || got.Source != src || got.AppliedBy != "alice" || len(got.ChangedSince) != 0 {
		t.Fatalf("alice reads the source: %d %s", status, body)
	}
	if status, body, _ := e.Call("bob", "GET", path, nil); status != http.StatusForbidden || !strings.Contains(string(body), "PERMISSION_DENIED") {
		t.Errorf("bob, the task shared with him: %d %s, want 403", status, body)
	}
	if status, body, _ := e.Call("root", "GET", path, nil); status != http.StatusNotFound {
		t.Errorf("root, the task not shared with him: %d %s, want 404", status, body)
	}
	// The recorder saves a case: it is merged into the source, whose
	// other lines (its comment) stay as written, in the save's
	// transaction; it is not listed as changed since.
	if _, err := e.App.API.SaveCase(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceWeb}, api.SaveCaseIn{TaskID: applied.Task.ID, Source: "key: rec\ntitle: Rec\nsteps:\n  - open: /\n"}); err != nil {
		t.Fatal(err)
	}
	status, body, _ = e.Call("alice", "GET", path, nil)
	withRec := src + "  - key: rec\n    title: Rec\n    steps:\n      - open: /\n"
	if err := json.Unmarshal(body, &got); err != nil || got.Source != withRec || len(got.ChangedSince) != 0 {
		t.Errorf("after the recorder's save: %d %s, want rec in the source, nothing changed since", status, body)
	}
	// Saved again, its item is replaced.
	if _, err := e.App.API.SaveCase(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceWeb}, api.SaveCaseIn{TaskID: applied.Task.ID, Source: "key: rec\ntitle: Rec again\nsteps:\n  - open: /again\n"}); err != nil {
		t.Fatal(err)
	}
	status, body, _ = e.Call("alice", "GET", path, nil)
	withRec = src + "  - key: rec\n    title: Rec again\n    steps:\n      - open: /again\n"
	if err := json.Unmarshal(body, &got); err != nil || got.Source != withRec || len(got.ChangedSince) != 0 {
		t.Errorf("after the recorder's second save: %d %s", status, body)
	}
	dry := strings.Replace(src, "# the shop's suite", "# a dry run", 1)
	if status, body, _ := e.Call("alice", "POST", "/api/v1/tasks", map[string]any{"source": dry, "dryRun": true}); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("dry run: %d %s", status, body)
	}
	next := strings.Replace(src, "# the shop's suite", "# the second", 1)
	if status, body, _ := e.Call("alice", "POST", "/api/v1/tasks", map[string]any{"source": next}); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("apply again: %d %s", status, body)
	}
	status, body, _ = e.Call("alice", "GET", path, nil)
	if err := json.Unmarshal(body, &got); err != nil || got.Source != next || len(got.ChangedSince) != 0 {
		t.Errorf("after the next apply: %d %s", status, body)
	}
}
