package webui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
)

// TestConsoleSchedulesAndAlerts: the task page lists the task's schedules
// with their next fire times, adds, pauses, resumes and removes one, and
// shows the cases a dependency change broke (also on the case page).
func TestConsoleSchedulesAndAlerts(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	suite := "task:\n  name: nightly-shop\n  baseURL: http://127.0.0.1:9\n  schedule: {every: 1h}\ncases:\n  - {key: c, title: a case, steps: [{assert: 'true'}]}\n"
	_, _, resp := alice.post("/tasks/apply", url.Values{"source": {suite}})
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	_, body, _ := alice.get(taskPath)
	if !strings.Contains(body, `id="schedules"`) || !strings.Contains(body, "every 1h0m0s") || !strings.Contains(body, "(suite)") || !strings.Contains(body, "<time>") {
		t.Fatalf("the task page's schedules: %.3000s", body)
	}
	status, body, _ := alice.post(taskPath+"/schedules", url.Values{"name": {"nightly"}, "kind": {"cron"}, "cron": {"0 2 * * *"}, "timeZone": {"Europe/Paris"}, "missed": {"runOnce"}, "overlap": {"skip"}})
	if status != http.StatusSeeOther {
		t.Fatalf("add a schedule: %d %.500s", status, body)
	}
	_, body, _ = alice.get(taskPath)
	if !strings.Contains(body, "cron 0 2 * * * (Europe/Paris)") || !regexp.MustCompile(`<time>\d{4}-\d\d-\d\dT02:00:00(\+|&#43;)0[12]:00</time>`).MatchString(body) {
		t.Fatalf("the new schedule is not listed with its next fire times: %.4000s", body)
	}
	if status, body, _ := alice.post(taskPath+"/schedules", url.Values{"kind": {"cron"}, "cron": {"0 2 * *"}}); status == http.StatusSeeOther || !strings.Contains(body, "INVALID_ARGUMENT") && !strings.Contains(body, "cron") {
		t.Fatalf("a bad cron was taken: %d", status)
	}
	list, err := e.App.Store.FindSchedules(t.Context(), duet.ScheduleFilter{Viewer: "alice"})
	if err != nil || len(list) != 2 {
		t.Fatal(list, err)
	}
	var mine *duet.Schedule
	for _, s := range list {
		if s.Name == "nightly" {
			mine = s
		}
	}
	alice.post(taskPath+"/schedules/"+mine.ID+"/pause", nil)
	if _, body, _ := alice.get(taskPath); !strings.Contains(body, "<strong>Paused</strong>") {
		t.Fatalf("pause: %.3000s", body)
	}
	alice.post(taskPath+"/schedules/"+mine.ID+"/resume", nil)
	if status, _, _ := alice.post(taskPath+"/schedules/"+mine.ID+"/remove", nil); status != http.StatusSeeOther {
		t.Fatalf("remove: %d", status)
	}
	if got, _ := e.App.Store.FindSchedules(t.Context(), duet.ScheduleFilter{Viewer: "alice"}); len(got) != 1 {
		t.Fatalf("after remove: %+v", got)
	}
	// bob, who cannot see the task, changes nothing.
	bob := signIn(t, e, "bob")
	if status, _, _ := bob.post(taskPath+"/schedules/"+list[0].ID+"/pause", nil); status == http.StatusSeeOther {
		t.Fatalf("bob paused alice's schedule")
	}

	// A run from a CI job shows its origin, and the runs list filters by it.
	out, err := e.App.API.StartRunFrom(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceAPI}, catalog.StartRunIn{TaskID: strings.TrimPrefix(taskPath, "/tasks/"),
		IdempotencyKey: "ci-1"}, &duet.RunOrigin{Branch: "feature/pay", Commit: "abc123", PullRequest: "https://git.example/acme/shop/pull/7"})
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := alice.get("/runs?branch=feature/pay"); !strings.Contains(body, out.RunID) {
		t.Fatalf("the runs of a branch: %.2000s", body)
	}
	if _, body, _ := alice.get("/runs?branch=main"); strings.Contains(body, out.RunID) {
		t.Fatalf("another branch lists the run")
	}
	if _, body, _ := alice.get("/runs/" + out.RunID); !strings.Contains(body, `id="run-origin"`) || !strings.Contains(body, `href="https://git.example/acme/shop/pull/7"`) {
		t.Fatalf("the run page's origin: %.2000s", body)
	}

	// A sync found the case's tool changed (internal/contract): the task
	// and case pages say so.
	task, _ := e.App.Store.FindTaskByName(t.Context(), "alice", "nightly-shop")
	cases, _, _, _ := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: task.ID})
	if err := e.App.Store.SaveContractAlerts(t.Context(), []*duet.ContractAlert{{TaskID: task.ID, CaseID: cases[0].ID, CaseKey: "c", CaseTitle: "a case",
		CaseVersion: cases[0].Version, ServerKey: "mcp_orders_0123abcd", Tool: "query_order", Broken: true,
		Problems: []string{`tool query_order now requires argument "region"`}, Changes: []string{`argument "region" added, required`}, DetectedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = alice.get(taskPath)
	if !strings.Contains(body, `id="dependency-alerts"`) || !strings.Contains(body, "Broken by a dependency change") || !strings.Contains(body, "now requires argument &#34;region&#34;") {
		t.Fatalf("the task page's alerts: %.3000s", body)
	}
	_, body, _ = alice.get("/cases/" + cases[0].ID)
	if !strings.Contains(body, `id="case-alert"`) || !strings.Contains(body, "query_order") {
		t.Fatalf("the case page's alert: %.2000s", body)
	}
}
