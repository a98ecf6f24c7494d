package catalog_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
)

// TestStartRunTakesATaskName: start_test_run (and so POST /api/v1/runs and
// `duet run`) takes a task's name where it takes its id — the owner's own
// task, or the one task of that name shared with the caller — and a name
// two shared tasks have is refused naming their ids. A remote browser's
// own DevTools address (Chrome's ws://…/devtools/browser/UUID, longer than
// 64 characters) is a device the tool accepts.
func TestStartRunTakesATaskName(t *testing.T) {
	t.Parallel()
	c, db, task, _ := setup(t, catalog.Options{})
	start := func(user, ref, device string) *catalog.Result {
		return call(t, c, user, catalog.ToolStartRun, map[string]any{"taskId": ref, "idempotencyKey": duet.NewID("k"), "device": device})
	}
	for _, user := range []string{"alice", "bob"} { // the owner, and the one it is shared with
		r := start(user, "shop", "")
		if r.IsError {
			t.Fatalf("%s: start_test_run by name: %s %s", user, r.Code, r.Text)
		}
		var out catalog.StartRunOut
		json.Unmarshal(r.Structured, &out)
		run, err := db.FindRunByID(t.Context(), user, out.RunID)
		if err != nil || run.TaskID != task.ID {
			t.Fatalf("%s: the run of task \"shop\": %+v %v, want task %s", user, run, err, task.ID)
		}
	}
	if r := start("carol", "shop", ""); r.Code != duet.CodeNotFound {
		t.Errorf("carol, who cannot see it: got %s %s, want NOT_FOUND", r.Code, r.Text)
	}
	// A second task "shop" shared with bob: the name no longer says which.
	s, err := compiler.CompileSuite(t.Context(), []byte("task: {name: shop, sharedWith: [bob]}\ncases:\n  - {key: a, title: t, steps: [{assert: \"true\"}]}\n"), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.ApplySuite(t.Context(), "carol", s)
	if err != nil {
		t.Fatal(err)
	}
	if r := start("bob", "shop", ""); r.Code != duet.CodeInvalidArgument || !strings.Contains(r.Text, task.ID) || !strings.Contains(r.Text, other.Task.ID) {
		t.Errorf("bob, with two tasks named shop: got %s %s, want INVALID_ARGUMENT naming both ids", r.Code, r.Text)
	}
	if r := start("alice", "shop", ""); r.IsError { // her own comes first
		t.Errorf("alice, who owns a shop: got %s %s", r.Code, r.Text)
	}
	chrome := "desktop@ws://127.0.0.1:9222/devtools/browser/3f9c2b7e-8d41-4c6a-9b1f-2e7d5a0c4b18"
	if r := start("alice", task.ID, chrome); r.IsError {
		t.Errorf("a run on Chrome's own DevTools address: got %s %s", r.Code, r.Text)
	}
}
