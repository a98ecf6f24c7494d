package webui_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// TestEditTheSuiteOfATask: the task page's "Edit the suite" opens the YAML
// the task was last applied from (comments and all) in the apply page's
// editor, which checks it as it is typed (a problem at its line);
// applied again it is the task's source. Bob, with whom the task is
// shared, has no such link and gets 403.
func TestEditTheSuiteOfATask(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	alice, bob := signIn(t, e, "alice"), signIn(t, e, "bob")
	src := "# the shop, as written\ntask: {name: shop, baseURL: 'http://127.0.0.1:9', sharedWith: [bob]}\ncases:\n  - key: a\n    title: A\n    steps:\n      - set: {x: '1'}\n"
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {src}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	if _, body, _ := alice.get(taskPath); !strings.Contains(body, `href="`+taskPath+`/edit"`) {
		t.Errorf("alice's task page has no Edit the suite link")
	}
	if _, body, _ := bob.get(taskPath); strings.Contains(body, `id="edit-suite"`) {
		t.Errorf("bob's page of the task shared with him offers to edit its suite")
	}
	if status, _, _ := bob.get(taskPath + "/edit"); status != http.StatusForbidden {
		t.Errorf("bob opens the suite's source: %d, want 403", status)
	}
	status, body, _ = alice.get(taskPath + "/edit")
	if status != http.StatusOK || !strings.Contains(body, html.EscapeString(src)) || !strings.Contains(body, `id="edit-note"`) {
		t.Fatalf("alice's editor: %d %.2000s", status, body)
	}

	chrome := startChromium(t)
	p := tab(t, chrome, e.URL, t.TempDir(), "alice")
	p.open("/signin")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]+"\r"), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	p.open(taskPath)
	p.do("Edit the suite", chromedp.Click(chromedp.CSS("#edit-suite")), chromedp.WaitVisible(chromedp.CSS("#source")))
	if got := run(p, "the editor's text", chromedp.Evaluate[string](`document.getElementById('source').value`)); got != src {
		t.Fatalf("the editor opens %q, want the applied source", got)
	}
	p.do("break step 1", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('source'); s.value = s.value.replace("set: {x: '1'}", "clack: x"); s.dispatchEvent(new Event('input')); })()`))
	deadline := time.Now().Add(30 * time.Second)
	for !p.eval(`!!document.querySelector('#source-problems li[data-line="7"]')`) {
		if time.Now().After(deadline) {
			t.Fatalf("no problem shown at line 7: %q", p.liveText("#source-check"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	edited := strings.Replace(src, "# the shop, as written", "# edited in the console", 1) + "  - key: b\n    title: B\n    steps:\n      - set: {y: '2'}\n"
	p.do("write the new suite and apply it", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('source'); s.value = `+jsonText(edited)+`; s.dispatchEvent(new Event('input')); })()`),
		chromedp.Click(chromedp.CSS(`form[action="/tasks/apply"] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(".notice")))
	// A form sends a textarea's lines with CRLF; the source is kept as sent.
	status, body, _ = alice.get(taskPath + "/edit")
	if status != http.StatusOK || !strings.Contains(strings.ReplaceAll(body, "\r", ""), html.EscapeString(edited)) {
		i := strings.Index(body, "<textarea")
		t.Errorf("the source after applying the edit: %d %.600s", status, body[max(i, 0):])
	}
}
