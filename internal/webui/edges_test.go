package webui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/app/apptest"
)

// TestConsoleEdges: the rough edges a tester met, smoothed. A new token is
// shown by the page a POST redirects to, once (a reload shows nothing, and
// the cookie that carried it holds it sealed); the case page names its
// task; the run page is titled by its task, the run's number and its
// start time, not its id;
// cancelling a run that had ended says so; the live progress names the
// task; /favicon.ico is an icon.
func TestConsoleEdges(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")

	// A token: POST, redirect, shown once.
	status, body, resp := alice.post("/tokens", url.Values{"name": {"laptop"}, "expiresInDays": {"7"}})
	if status != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/tokens") || strings.Contains(body, "duet_pat_") {
		t.Fatalf("create a token: %d %s %.300s, want 303 to /tokens without the value", status, resp.Header.Get("Location"), body)
	}
	var carried *http.Cookie
	for _, ck := range resp.Cookies() {
		if strings.Contains(ck.Value, "duet_pat_") {
			t.Fatalf("the cookie %s carries the token in the clear", ck.Name)
		}
		if ck.MaxAge > 0 {
			carried = ck
		}
	}
	if carried == nil || carried.Path != "/tokens" || !carried.HttpOnly || carried.MaxAge > 60 {
		t.Fatalf("the cookie that carries the new token: %+v", carried)
	}
	// Another session of alice's cannot open it.
	other := signIn(t, e, "alice")
	u, _ := url.Parse(e.URL + "/tokens")
	other.c.Jar.SetCookies(u, []*http.Cookie{{Name: carried.Name, Value: carried.Value, Path: "/tokens"}})
	if _, page, _ := other.get("/tokens"); strings.Contains(page, "new-token") {
		t.Fatal("another session shows the new token")
	}
	_, page, _ := alice.get("/tokens")
	secret := regexp.MustCompile(`<code id="new-token">(duet_pat_[^<]+)</code>`).FindStringSubmatch(page)
	if secret == nil {
		t.Fatalf("the page after creating a token does not show it: %.2000s", page)
	}
	if _, again, _ := alice.get("/tokens"); strings.Contains(again, secret[1]) || strings.Contains(again, "new-token") {
		t.Fatal("a reload shows the token again")
	}

	// A task, a case, a run.
	status, body, resp = alice.post("/tasks/apply", url.Values{"source": {apptest.Suite("plain")}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	_, taskPage, _ := alice.get(taskPath)
	casePath := regexp.MustCompile(`href="(/cases/[^"]+)"`).FindStringSubmatch(taskPage)
	if casePath == nil {
		t.Fatalf("no case link on the task page")
	}
	_, casePage, _ := alice.get(casePath[1])
	if !strings.Contains(casePage, `<a href="`+taskPath+`" id="case-task">plain</a>`) {
		t.Errorf("the case page does not link its task by name: %.3000s", casePage)
	}
	_, _, resp = alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {"k1"}})
	runPath := resp.Header.Get("Location")
	runID := strings.TrimPrefix(runPath, "/runs/")
	if ok, err := e.App.Worker.ExecuteRun(t.Context(), runID); !ok || err != nil {
		t.Fatalf("run: %v %v", ok, err)
	}
	_, runPage, _ := alice.get(runPath)
	title := regexp.MustCompile(`<h1>([^<]*)</h1>`).FindStringSubmatch(runPage)
	if title == nil || strings.Contains(title[1], runID) || !strings.HasPrefix(title[1], "plain — run #1, started ") || !strings.Contains(title[1], "UTC") {
		t.Errorf("the run page's title: %q, want the task's name, the run's number and when it started", title)
	}
	if !strings.Contains(runPage, runID) {
		t.Errorf("the run page does not show the run's id")
	}

	// Cancelling the run, which has ended: nothing to cancel, said so.
	status, _, resp = alice.post(runPath+"/cancel", nil)
	if status != http.StatusSeeOther {
		t.Fatalf("cancel: %d", status)
	}
	_, after, _ := alice.get(resp.Header.Get("Location"))
	if !strings.Contains(after, "The run had already ended") || strings.Contains(after, "Cancellation requested") {
		t.Errorf("cancelling a run that had ended: %.1500s", after)
	}
	_, _, resp = alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {"k2"}})
	second := resp.Header.Get("Location")
	// The second run of the task is #2, for its owner and for a colleague
	// it is shared with alike; before it is shared, the colleague sees
	// no run.
	if _, page, _ := alice.get(second); !strings.Contains(page, "<h1>plain — run #2, queued ") {
		t.Errorf("the second run's title: %.1500s", page)
	}
	if _, page, _ := alice.get(runPath); !strings.Contains(page, "<h1>plain — run #1, started ") {
		t.Errorf("the first run's title, once there is a second: %.1500s", page)
	}
	bob := signIn(t, e, "bob")
	if status, _, _ := bob.get(second); status != http.StatusNotFound {
		t.Errorf("bob opens alice's run before she shares its task: %d, want 404", status)
	}
	if status, _, _ := alice.post(taskPath+"/share", url.Values{"with": {"bob"}}); status != http.StatusSeeOther {
		t.Fatalf("share the task with bob: %d", status)
	}
	if _, page, _ := bob.get(second); !strings.Contains(page, "<h1>plain — run #2, queued ") {
		t.Errorf("the second run's title as bob: %.1500s", page)
	}
	status, _, resp = alice.post(second+"/cancel", nil)
	if _, after, _ := alice.get(resp.Header.Get("Location")); status != http.StatusSeeOther || !strings.Contains(after, "Cancelled.") {
		t.Errorf("cancelling a queued run: %d %.1500s", status, after)
	}

	// The live progress names the task.
	if status, events, _ := alice.get(runPath + "/events"); status != 200 || !strings.Contains(events, `"taskName":"plain"`) {
		t.Errorf("the run's events: %d %.500s", status, events)
	}

	// The icon.
	status, icon, resp := alice.get("/favicon.ico")
	if status != 200 || resp.Header.Get("Content-Type") != "image/x-icon" || !strings.HasPrefix(icon, "\x00\x00\x01\x00") {
		t.Errorf("/favicon.ico: %d %s %q", status, resp.Header.Get("Content-Type"), icon[:min(len(icon), 8)])
	}
}
