package webui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/app/apptest"
)

// TestStartRunInEnvironment: the task page offers the task's environments,
// its default selected, and a run started with one runs in it; one the
// task does not have is refused.
func TestStartRunInEnvironment(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	src := "task:\n  name: envs\n  baseURL: http://127.0.0.1:9\n  defaultEnvironment: local\n  environments:\n    local: {vars: {tier: l}}\n    staging: {baseURL: 'http://127.0.0.1:9/s', vars: {tier: s}}\ncases:\n  - title: tier\n    steps:\n      - assert: env.tier == \"s\"\n"
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {src}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	_, page, _ := alice.get(taskPath)
	if !strings.Contains(page, `<select id="environment" name="environment"><option value="local" selected>local</option><option value="staging">staging</option></select>`) {
		t.Errorf("the task page's environments: %.3000s", page)
	}
	status, _, resp = alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {"k1"}, "environment": {"staging"}})
	if status != http.StatusSeeOther {
		t.Fatalf("start a run: %d", status)
	}
	runID := strings.TrimPrefix(resp.Header.Get("Location"), "/runs/")
	if ok, err := e.App.Worker.ExecuteRun(t.Context(), runID); !ok || err != nil {
		t.Fatalf("run: %v %v", ok, err)
	}
	run, err := e.App.Store.FindRunByID(t.Context(), "alice", runID)
	if err != nil || run.Environment != "staging" || run.Status != "passed" {
		t.Errorf("run: %+v %v", run, err)
	}
	if status, body, _ := alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {"k2"}, "environment": {"prod"}}); status != http.StatusBadRequest || !strings.Contains(body, "no environment") {
		t.Errorf("an unknown environment: %d %.2000s", status, body)
	}
}
