package webui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// triedCase is a case being written in the recorder: a sign-in on the
// shop, what its URL says saved, an assertion that reads the saved
// variable, and one that fails.
const triedCase = `key: tried
title: Tried
steps:
  - open: /login
  - fill: {label: Username, value: alice}
  - fill: {label: Password, value: s3cret}
  - click: {role: button, name: Sign in}
  - extract: {from: url.query, param: welcome, as: who}
  - assertText: {selector: "#welcome", equals: "Welcome, ${who}!"}
  - assertText: {selector: "#welcome", equals: "Welcome, bob!"}
  - saveSession: tried
  - session: tried
`

// TestTryStepsInTheConsole: in Chromium against a real ` + "`duet serve`" + `,
// the tester writes a case beside the live view and tries its steps on
// the live page: steps 1–3 fill the sign-in form (passed, a screenshot
// of the page after them, nothing recorded) and step 4 signs in; step 5 saves a variable, which step 6, tried on its own
// afterwards, reads on the page the earlier tryout left (passed); step 7
// fails with its assertion's error. What the steps did is not recorded,
// nothing is stored (no run, no case), and each tryout is audited as
// trySteps with callSource web.
func TestTryStepsInTheConsole(t *testing.T) {
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
	p := tab(t, chrome, e.URL, t.TempDir(), "alice")
	p.open("/signin")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]+"\r"), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	p.open(taskPath)
	p.do("Record a case", chromedp.Click(chromedp.CSS("#record-case")), chromedp.WaitVisible(chromedp.CSS("#rec-view")))
	waitFor := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !p.eval(js) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s (%s); tryout: %s", what, js, p.liveText("#rec-try-result"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the first frame", `+(document.getElementById('recorder').dataset.frames || 0) > 0`)
	waitFor("the open step", `document.getElementById('rec-yaml').value.includes('open: "/"')`)
	p.do("write the case", chromedp.Evaluate[chromedp.Void](`(() => { const y = document.getElementById('rec-yaml'); y.value = `+jsonText(triedCase)+`; y.dispatchEvent(new Event('input')); })()`))
	tries := 0
	try := func(from, to int) {
		t.Helper()
		tries++
		p.do("try", chromedp.SetValue(chromedp.CSS("#rec-try-from"), itoa(from)), chromedp.SetValue(chromedp.CSS("#rec-try-to"), itoa(to)), chromedp.Click(chromedp.CSS("#rec-try-button")))
		waitFor("the tryout's result", `document.getElementById('recorder').dataset.tried === '`+itoa(tries)+`'`)
	}
	statuses := func() []string {
		return run(p, "statuses", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#rec-try-steps li')).map(li => li.dataset.status)`))
	}

	try(1, 3)
	if got := statuses(); p.liveText("#rec-try-status") != "Passed." || strings.Join(got, ",") != "passed,passed,passed" {
		t.Fatalf("steps 1–3: %q %v", p.liveText("#rec-try-result"), got)
	}
	// What the tried fills did is not recorded: once the page's events
	// before it are handled (a press on the page's corner goes after
	// them), the recording has no fill.
	sessions := e.App.Recorder.Sessions("alice")
	if len(sessions) != 1 {
		t.Fatalf("alice has %d recording sessions", len(sessions))
	}
	live := sessions[0]
	if s, body := act(t, alice, live.ID, `{"op":"input","events":[{"kind":"mouse","type":"pressed","x":1,"y":1,"button":"left","clickCount":1},{"kind":"mouse","type":"released","x":1,"y":1,"button":"left","clickCount":1}]}`, true); s != http.StatusOK {
		t.Fatalf("a press on the page: %d %s", s, body)
	}
	noFills := func(when string) {
		t.Helper()
		for _, st := range live.Steps() {
			if st.Kind == "fill" {
				t.Fatalf("%s the recording has %+v: a tried step was recorded", when, live.Steps())
			}
		}
	}
	noFills("after trying fills")
	try(4, 4)
	if got := statuses(); p.liveText("#rec-try-status") != "Passed." || strings.Join(got, ",") != "passed" {
		t.Fatalf("step 4: %q %v", p.liveText("#rec-try-result"), got)
	}
	if !p.eval(`!document.getElementById('rec-try-shot').hidden && document.getElementById('rec-try-shot').src.startsWith('data:image/png;base64,')`) {
		t.Errorf("no screenshot of the page after the steps")
	}
	try(5, 5)
	if got := statuses(); strings.Join(got, ",") != "passed" || !strings.Contains(p.liveText("#rec-try-vars"), `"who": "alice"`) {
		t.Fatalf("step 5: %v, vars %s", got, p.liveText("#rec-try-vars"))
	}
	// Step 6 alone: the page is where steps 1–4 left it, and the
	// variable step 5 saved is there.
	try(6, 0)
	if got := statuses(); strings.Join(got, ",") != "passed" {
		t.Fatalf("step 6, on the page the earlier tryouts left: %v %s", got, p.liveText("#rec-try-result"))
	}
	try(7, 7)
	if got := statuses(); p.liveText("#rec-try-status") == "Passed." || strings.Join(got, ",") != "failed" || !strings.Contains(p.liveText("#rec-try-steps"), "Welcome, bob!") {
		t.Fatalf("step 7 must fail with its assertion: %v %s", got, p.liveText("#rec-try-result"))
	}

	// A session used before any tryout saved it fails at once; saved by
	// one tryout, the next starts from it (held with the live page only).
	try(9, 9)
	if got := statuses(); strings.Join(got, ",") != "failed" || !strings.Contains(p.liveText("#rec-try-steps"), "SESSION_NOT_FOUND") {
		t.Fatalf("step 9 before any saveSession: %v %s", got, p.liveText("#rec-try-result"))
	}
	try(8, 8)
	if got := statuses(); strings.Join(got, ",") != "passed" {
		t.Fatalf("step 8 (saveSession): %v %s", got, p.liveText("#rec-try-result"))
	}
	try(9, 9)
	if got := statuses(); strings.Join(got, ",") != "passed" {
		t.Fatalf("step 9 (session), after step 8 saved it: %v %s", got, p.liveText("#rec-try-result"))
	}

	// Nothing recorded, nothing stored.
	noFills("at the end,")
	runs, _, err := e.App.Store.FindRuns(t.Context(), duet.RunFilter{Viewer: "alice", TaskID: taskID})
	if err != nil || len(runs) != 0 {
		t.Errorf("runs of the task after trying steps: %d %v, want none", len(runs), err)
	}
	if cases, _, _, err := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: taskID}); err != nil || len(cases) != 1 {
		t.Errorf("cases of the task after trying steps: %d %v, want the one applied", len(cases), err)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Method == "trySteps" && r.CallSource == duet.SourceWeb {
			n++
		}
	}
	if n != tries {
		t.Errorf("%d trySteps audit records with callSource web, want %d", n, tries)
	}
}

// TestTryingStepsIsGoverned: bob cannot try steps in alice's session
// (NOT_FOUND, as a session that does not exist); a tryout needs the CSRF
// token; a case that does not compile is refused with the compiler's
// message; a range outside the case is INVALID_ARGUMENT; and when the
// task is no longer shared with bob, he cannot try steps of it in the
// session he opened while it was.
func TestTryingStepsIsGoverned(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, map[string]string{"DUET_BROWSERS": "1", "DUET_RECORDER_SESSIONS_PER_USER": "2"})
	shop := sampletest.Shop(t)
	alice, bob := signIn(t, e, "alice"), signIn(t, e, "bob")
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {recordSuite(shop)}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	rid := startRecordingAs(t, alice, taskPath)
	tryBody := func(src string, from, to int) string {
		b, _ := json.Marshal(map[string]any{"source": src, "from": from, "to": to})
		return string(b)
	}
	const open = "key: k\ntitle: K\nsteps:\n  - open: /login\n"
	if s, body := tryAs(t, bob, rid, tryBody(open, 1, 1), true); s != http.StatusNotFound {
		t.Errorf("bob tries steps in alice's session: %d %s, want 404", s, body)
	}
	if s, body := tryAs(t, alice, rid, tryBody(open, 1, 1), false); s != http.StatusForbidden {
		t.Errorf("a tryout without the CSRF token: %d %s, want 403", s, body)
	}
	if s, body := tryAs(t, alice, rid, tryBody("key: k\ntitle: K\nsteps:\n  - clack: x\n", 1, 1), true); s != http.StatusBadRequest || !strings.Contains(body, "clack") {
		t.Errorf("a case that does not compile: %d %s, want 400 with the compiler's message", s, body)
	}
	if s, body := tryAs(t, alice, rid, tryBody(open, 2, 2), true); s != http.StatusBadRequest || !strings.Contains(body, "INVALID_ARGUMENT") {
		t.Errorf("a step the case does not have: %d %s, want 400", s, body)
	}
	if s, body := tryAs(t, alice, rid, tryBody(open, 1, 1), true); s != http.StatusOK || !strings.Contains(body, `"status":"passed"`) {
		t.Errorf("alice tries her step: %d %.500s", s, body)
	}

	brid := startRecordingAs(t, bob, taskPath)
	if s, body := tryAs(t, bob, brid, tryBody(open, 1, 1), true); s != http.StatusOK || !strings.Contains(body, `"status":"passed"`) {
		t.Fatalf("bob tries a step on the task shared with him: %d %.500s", s, body)
	}
	// Alice stops sharing the task: bob's session is still open, but he
	// can no longer run the task's steps in it.
	unshared := strings.Replace(recordSuite(shop), "sharedWith: [bob]", "sharedWith: []", 1)
	if status, body, _ := alice.post("/tasks/apply", url.Values{"source": {unshared}}); status != http.StatusSeeOther {
		t.Fatalf("apply without sharing: %d %s", status, body)
	}
	if s, body := tryAs(t, bob, brid, tryBody(open, 1, 1), true); s != http.StatusNotFound {
		t.Errorf("bob tries a step of a task no longer shared with him: %d %s, want 404", s, body)
	}
}

// tryAs posts a tryout of the live view rid as b.
func tryAs(t *testing.T, b *browser, rid, body string, csrf bool) (int, string) {
	t.Helper()
	return postJSON(t, b, "/record/"+rid+"/try", body, csrf)
}

// jsonText is s as a JavaScript string literal.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRecordingNamesTheTasksTestIDAttribute: on a task whose suite says
// testIdAttribute: data-qa, the recording session's testId locators name
// data-qa, and a tried step's testId finds the element by data-qa (the
// lab's Pay button has data-qa="pay" and no data-testid): the case is
// compiled with the task's attribute, as its save is.
func TestRecordingNamesTheTasksTestIDAttribute(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, map[string]string{"DUET_BROWSERS": "1"})
	shop := sampletest.Shop(t)
	alice := signIn(t, e, "alice")
	src := "task: {name: qa, baseURL: " + shop + ", testIdAttribute: data-qa}\ncases:\n  - key: home\n    title: Home\n    steps:\n      - open: /lab/form\n"
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {src}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	rid := startRecordingAs(t, alice, strings.Split(resp.Header.Get("Location"), "?")[0])
	live := e.App.Recorder.Sessions("alice")
	if len(live) != 1 || live[0].TestIDAttr() != "data-qa" {
		t.Fatalf("the session's test id attribute: %d sessions, %q", len(live), live[0].TestIDAttr())
	}
	b, _ := json.Marshal(map[string]any{"source": "key: k\ntitle: K\nsteps:\n  - open: /lab/form\n  - assertVisible: {testId: pay}\n", "from": 1, "to": 2})
	if s, body := tryAs(t, alice, rid, string(b), true); s != http.StatusOK || !strings.Contains(body, `"status":"passed"`) {
		t.Errorf("a tried testId step on data-qa: %d %.600s", s, body)
	}
}
