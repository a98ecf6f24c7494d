package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// recordSuite is a task on the shop with one case already, shared with bob.
func recordSuite(shop string) string {
	return "task: {name: shop, baseURL: " + shop + ", sharedWith: [bob]}\ncases:\n  - key: home\n    title: Home\n    steps:\n      - open: /login\n      - assertVisible: {role: button, name: Sign in}\n"
}

var recordRe = regexp.MustCompile(`^/record/(rec_[A-Za-z0-9_-]+)$`)

// startRecordingAs posts "Record a case" of taskPath as b and returns the
// session's id.
func startRecordingAs(t *testing.T, b *browser, taskPath string) string {
	t.Helper()
	status, body, resp := b.post(taskPath+"/record", nil)
	m := recordRe.FindStringSubmatch(resp.Header.Get("Location"))
	if status != http.StatusSeeOther || m == nil {
		t.Fatalf("Record a case: %d %s %.500s", status, resp.Header.Get("Location"), body)
	}
	return m[1]
}

// act posts an action of the live view as b, with or without the CSRF
// header.
func act(t *testing.T, b *browser, rid, body string, csrf bool) (int, string) {
	t.Helper()
	return postJSON(t, b, "/record/"+rid+"/act", body, csrf)
}

// postJSON posts body to path as b, with or without the CSRF header.
func postJSON(t *testing.T, b *browser, path, body string, csrf bool) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", b.e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if csrf {
		req.Header.Set("X-CSRF-Token", b.csrf)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, sb.String()
}

// TestRecordingIsTheOwners: bob, with whom the task is shared, can neither
// see, watch, drive, save nor close alice's recording session (NOT_FOUND,
// as a session that does not exist); alice's own action without the CSRF
// token is refused; a second session of alice's is RATE_LIMITED; each
// operation is audited with callSource web. Bob may record on the shared
// task himself, and what he saves is a draft of his.
func TestRecordingIsTheOwners(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, map[string]string{"DUET_BROWSERS": "1"})
	shop := sampletest.Shop(t)
	alice, bob := signIn(t, e, "alice"), signIn(t, e, "bob")
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {recordSuite(shop)}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	rid := startRecordingAs(t, alice, taskPath)

	if status, body, _ := alice.get("/record/" + rid); status != http.StatusOK || !strings.Contains(body, `id="rec-view"`) {
		t.Fatalf("alice's recording page: %d %.300s", status, body)
	}
	for _, try := range []struct {
		what string
		do   func() int
	}{
		{"view", func() int { s, _, _ := bob.get("/record/" + rid); return s }},
		{"watch", func() int {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+"/record/"+rid+"/stream", nil)
			resp, err := bob.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close() // a stream that was let through would not end
			return resp.StatusCode
		}},
		{"drive", func() int {
			s, _ := act(t, bob, rid, `{"op":"input","events":[{"kind":"mouse","type":"pressed","x":10,"y":10,"button":"left","clickCount":1}]}`, true)
			return s
		}},
		{"assert", func() int { s, _ := act(t, bob, rid, `{"op":"assertURL"}`, true); return s }},
		{"save", func() int {
			s, _, _ := bob.post("/record/"+rid+"/save", url.Values{"key": {"stolen"}, "title": {"t"}})
			return s
		}},
		{"close", func() int { s, _, _ := bob.post("/record/"+rid+"/close", nil); return s }},
	} {
		if got := try.do(); got != http.StatusNotFound {
			t.Errorf("bob can %s alice's session: %d, want 404", try.what, got)
		}
	}
	if s, body := act(t, alice, rid, `{"op":"assertURL"}`, false); s != http.StatusForbidden {
		t.Errorf("an action without the CSRF token: %d %s, want 403", s, body)
	}
	if s, body := act(t, alice, rid, `{"op":"assertURL","Op":"open"}`, true); s != http.StatusBadRequest {
		t.Errorf("a member twice in other cases: %d %s, want 400", s, body)
	}
	if status, body, _ := alice.post(taskPath+"/record", nil); status != http.StatusTooManyRequests || !strings.Contains(body, "RATE_LIMITED") {
		t.Errorf("a second session: %d %.300s, want 429 RATE_LIMITED", status, body)
	}
	if s, body := act(t, alice, rid, `{"op":"assertURL"}`, true); s != http.StatusOK || !strings.Contains(body, `"/login"`) && !strings.Contains(body, `"/"`) {
		t.Errorf("alice asserts the URL: %d %s", s, body)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.CallSource == duet.SourceWeb {
			seen[r.Method] = true
		}
	}
	for _, m := range []string{"startRecording", "viewRecording", "recorder.assertURL"} {
		if !seen[m] {
			t.Errorf("no audit record %s with callSource web; have %v", m, seen)
		}
	}
	// Bob records on the task shared with him: his save is a draft.
	if status, _, _ := alice.post("/record/"+rid+"/close", nil); status != http.StatusSeeOther {
		t.Fatalf("alice closes: %d", status)
	}
	brid := startRecordingAs(t, bob, taskPath)
	status, body, resp = bob.post("/record/"+brid+"/save", url.Values{"source": {"key: bobs\ntitle: Bob's\nsteps:\n  - open: /login\n"}})
	if status != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/cases/") {
		t.Fatalf("bob saves: %d %s %.300s", status, resp.Header.Get("Location"), body)
	}
	caseID := strings.TrimPrefix(strings.Split(resp.Header.Get("Location"), "?")[0], "/cases/")
	c, err := e.App.Store.FindCaseByID(t.Context(), "alice", caseID)
	if err != nil || c.Status != duet.CaseDraft || c.CreatedBy != "bob" {
		t.Fatalf("bob's saved case: %+v %v, want a draft by bob", c, err)
	}
	// A case that does not compile is shown again with the compiler's
	// message at its line.
	status, body, _ = bob.post("/record/"+brid+"/save", url.Values{"source": {"key: bad\ntitle: Bad\nsteps:\n  - open: /login\n  - clack: {role: button}\n"}})
	if status != http.StatusBadRequest || !strings.Contains(body, `id="rec-save-error"`) || !strings.Contains(body, ":5:") {
		t.Errorf("a case that does not compile: %d %.1500s", status, body)
	}
}

// TestRecordInTheConsole drives the recorder as a tester does, in
// Chromium against a real `duet serve`: from the task page "Record a
// case" opens the live view; clicks and keys on the view's image sign in
// on the sample shop; "Assert text" and a click on the welcome banner
// adds an assertion; the case is saved (a new case; the task's other case
// is kept), and a run of the task passes with it.
func TestRecordInTheConsole(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.Serve(t, map[string]string{"DUET_WORKERS": "1", "DUET_BROWSERS": "1"})
	shop := sampletest.Shop(t)
	alice := signIn(t, e, "alice")
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {recordSuite(shop)}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	taskID := strings.TrimPrefix(taskPath, "/tasks/")

	chrome := startChromium(t)
	// Where the shop's elements are, at the recorder's desktop viewport:
	// what a tester sees in the live view.
	ref := tab(t, chrome, shop, t.TempDir(), "ref")
	ref.do("viewport", chromedp.EmulateViewport(1280, 720))
	centre := func(path, sel string) (float64, float64) {
		ref.open(path)
		pt := run(ref, "rect of "+sel, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector(`+fmt.Sprintf("%q", sel)+`).getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`))
		return pt[0], pt[1]
	}
	ux, uy := centre("/login", "#username")
	px, py := centre("/login", "#password")
	sx, sy := centre("/login", "#login-submit")
	wx, wy := centre("/?welcome=alice", "#welcome")

	p := tab(t, chrome, e.URL, t.TempDir(), "alice")
	p.open("/signin")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]+"\r"), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	p.open(taskPath)
	p.do("Record a case", chromedp.Click(chromedp.CSS("#record-case")), chromedp.WaitVisible(chromedp.CSS("#rec-view")))
	waitFor := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !p.eval(js) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s (%s); YAML:\n%s\nerror: %s", what, js, p.liveText("#rec-yaml"), p.liveText("#rec-error"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the first frame", `+(document.getElementById('recorder').dataset.frames || 0) > 0 && document.getElementById('rec-frame').naturalWidth > 0`)
	waitFor("the open step", `document.getElementById('rec-yaml').value.includes('open: "/"')`)
	p.do("open the login page", chromedp.SetValue(chromedp.CSS("#rec-url"), "/login"), chromedp.Click(chromedp.CSS("#rec-open-form button")))
	waitFor("the second open", `document.getElementById('rec-yaml').value.includes('open: "/login"')`)
	// A point of the page is a point of the image, scaled.
	click := func(x, y float64) {
		t.Helper()
		r := run(p, "image rect", chromedp.Evaluate[[]float64](`(() => { const r = document.getElementById('rec-frame').getBoundingClientRect(); return [r.x, r.y, r.width / 1280]; })()`))
		p.do("click the live view", chromedp.MouseClickXY(r[0]+x*r[2], r[1]+y*r[2]))
	}
	click(ux, uy)
	p.do("type the username", chromedp.KeyEvent("alice"))
	waitFor("the username", `document.getElementById('rec-yaml').value.includes('value: "alice"')`)
	click(px, py)
	p.do("type the password", chromedp.KeyEvent("s3cret"))
	waitFor("the password", `document.getElementById('rec-yaml').value.includes('value: "s3cret"')`)
	click(sx, sy)
	waitFor("the click", `document.getElementById('rec-yaml').value.includes('click: {role: "button", name: "Sign in"}')`)
	p.do("Assert text", chromedp.Click(chromedp.CSS("#rec-assert-text")))
	// The welcome page must be shown before its banner is picked.
	deadline := time.Now().Add(60 * time.Second)
	for {
		click(wx, wy)
		if p.eval(`document.getElementById('rec-yaml').value.includes('assertText')`) {
			break
		}
		time.Sleep(500 * time.Millisecond)
		if !p.eval(`document.getElementById('rec-view').classList.contains('picking')`) {
			p.do("Assert text again", chromedp.Click(chromedp.CSS("#rec-assert-text")))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no assertion recorded; YAML:\n%s\nerror: %s", p.liveText("#rec-yaml"), p.liveText("#rec-error"))
		}
	}
	yaml := run(p, "yaml", chromedp.Evaluate[string](`document.getElementById('rec-yaml').value`))
	if !strings.Contains(yaml, `fill: {role: "textbox", name: "Username", value: "alice"}`) || !strings.Contains(yaml, `assertText: {`) || strings.Contains(yaml, "selector:") {
		t.Errorf("recorded YAML: locators by role and name, no CSS:\n%s", yaml)
	}
	p.do("name and save", chromedp.SetValue(chromedp.CSS("#rec-key"), "sign-in"), chromedp.SetValue(chromedp.CSS("#rec-title"), "Sign in"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('rec-key').dispatchEvent(new Event('input'))`),
		chromedp.Click(chromedp.CSS("#rec-save-button")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if loc := run(p, "location", chromedp.Location()); !strings.Contains(loc, "/cases/") {
		t.Fatalf("after saving: at %s", loc)
	}
	cases, _, _, err := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: taskID})
	if err != nil || len(cases) != 2 {
		t.Fatalf("the task's cases after saving: %d %v, want home and sign-in", len(cases), err)
	}

	// A run of the task: both cases pass.
	status, b, _ := e.Call("alice", "POST", "/api/v1/runs", map[string]any{"taskId": taskID}, "Idempotency-Key", "rec-1")
	if status != http.StatusOK && status != http.StatusCreated && status != http.StatusAccepted {
		t.Fatalf("start a run: %d %s", status, b)
	}
	var started struct {
		RunID string `json:"runId"`
	}
	json.Unmarshal(b, &started)
	deadline = time.Now().Add(3 * time.Minute)
	for {
		run, err := e.App.Store.FindRunByID(t.Context(), "alice", started.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status.Final() {
			if run.Status != duet.StatusPassed {
				execs, _ := e.App.Store.FindExecutions(t.Context(), run.ID)
				var msgs []string
				for _, x := range execs {
					msgs = append(msgs, fmt.Sprintf("%s %s %s %s", x.CaseKey, x.Status, x.ErrorCode, x.ErrorMessage))
				}
				t.Fatalf("the run: %s, want passed: %v\n%s", run.Status, msgs, yaml)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %s", run.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSuiteEditorShowsErrorsAtTheirLines: on the apply page, the compiler
// checks the suite as it is typed (POST /tasks/validate, governed) and
// shows each problem at its line: the line number in the gutter is
// marked, and the problem's button puts the caret on that line.
func TestSuiteEditorShowsErrorsAtTheirLines(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	// The endpoint: the problems at line and column, nothing stored.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.URL+"/tasks/validate",
		strings.NewReader(`{"source":"task: {name: t, baseURL: http://127.0.0.1:9}\ncases:\n  - title: c\n    steps:\n      - clack: x\n"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", alice.csrf)
	resp, err := alice.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Valid    bool `json:"valid"`
		Problems []struct {
			Line, Col int
			Message   string
		} `json:"problems"`
	}
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || v.Valid || len(v.Problems) == 0 || v.Problems[0].Line != 5 || !strings.Contains(v.Problems[0].Message, "clack") {
		t.Fatalf("validate: %d %+v, want a problem at line 5", resp.StatusCode, v)
	}
	if tasks, _, _, _ := e.App.Store.FindTasks(t.Context(), duet.TaskFilter{Viewer: "alice"}); len(tasks) != 0 {
		t.Errorf("validating stored a task: %v", tasks)
	}

	chrome := startChromium(t)
	p := tab(t, chrome, e.URL, t.TempDir(), "alice")
	p.open("/signin")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]+"\r"), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	p.open("/tasks/apply")
	p.do("type a suite", chromedp.Click(chromedp.CSS("#source")),
		chromedp.KeyEvent("task: {name: t, baseURL: http://127.0.0.1:9}\ncases:\n- title: c\n  steps:\n  - open: /\n  - clack: {role: button}\n"))
	deadline := time.Now().Add(30 * time.Second)
	for !p.eval(`!!document.querySelector('#source-problems li[data-line="6"]') && !!document.querySelector('#source-lines .bad')`) {
		if time.Now().After(deadline) {
			t.Fatalf("no problem shown at line 6: %q", p.liveText("#source-check"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := p.liveText("#source-lines .bad"); got != "6" {
		t.Errorf("the gutter marks line %q, want 6", got)
	}
	p.do("go to the problem", chromedp.Click(chromedp.CSS(`#source-problems li[data-line="6"] button`)))
	if line := run(p, "caret line", chromedp.Evaluate[int](`document.getElementById('source').value.slice(0, document.getElementById('source').selectionStart).split('\n').length`)); line != 6 {
		t.Errorf("the caret is on line %d, want 6", line)
	}
	// Fixed, the problems go away.
	p.do("fix it", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('source'); s.value = "task: {name: t, baseURL: http://127.0.0.1:9}\ncases:\n  - title: c\n    steps:\n      - open: /\n      - click: {role: button}\n"; s.dispatchEvent(new Event('input')); })()`))
	deadline = time.Now().Add(30 * time.Second)
	for !p.eval(`document.getElementById('source').getAttribute('aria-invalid') === 'false' && document.querySelectorAll('#source-problems li').length === 0`) {
		if time.Now().After(deadline) {
			t.Fatalf("the fixed suite still has problems: %q", p.liveText("#source-check"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
