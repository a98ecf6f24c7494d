package webui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// TestCaseVersionsOnTheCasePage: a case applied twice, changed, has two
// versions; its page in Chromium lists them (the current one marked) and,
// with the two chosen in its form, shows their line diff: the changed
// line removed and added, marked, the other lines kept. Someone who
// cannot see the case gets 404 for its versions as for the case.
func TestCaseVersionsOnTheCasePage(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	alice, bob := signIn(t, e, "alice"), signIn(t, e, "bob")
	v1 := "task: {name: shop, baseURL: 'http://127.0.0.1:9'}\ncases:\n  - key: a\n    title: A\n    steps:\n      - set: {x: '1'}\n      - set: {y: '2'}\n"
	v2 := strings.Replace(v1, "{x: '1'}", "{x: '3'}", 1)
	var taskPath string
	for _, src := range []string{v1, v2} {
		status, body, resp := alice.post("/tasks/apply", url.Values{"source": {src}})
		if status != http.StatusSeeOther {
			t.Fatalf("apply: %d %s", status, body)
		}
		taskPath = strings.Split(resp.Header.Get("Location"), "?")[0]
	}
	cases, _, _, err := e.App.Store.FindCases(t.Context(), duet.CaseFilter{TaskID: strings.TrimPrefix(taskPath, "/tasks/")})
	if err != nil || len(cases) != 1 || cases[0].Version != 2 {
		t.Fatalf("the case: %v %v", cases, err)
	}
	casePath := "/cases/" + cases[0].ID
	if status, _, _ := bob.get(casePath + "?from=1&to=2"); status != http.StatusNotFound {
		t.Errorf("bob, who cannot see the case, compares its versions: %d, want 404", status)
	}

	chrome := startChromium(t)
	p := tab(t, chrome, e.URL, t.TempDir(), "alice")
	p.open("/signin")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]+"\r"), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	p.open(casePath)
	if rows := p.text("#case-versions tbody"); !strings.Contains(rows, "2 (current)") || !strings.Contains(rows, "apply") {
		t.Fatalf("the versions listed: %q", rows)
	}
	if p.eval(`!!document.getElementById('case-diff')`) {
		t.Fatal("a diff is shown before two versions are chosen")
	}
	p.do("compare version 1 with version 2", chromedp.SetValue(chromedp.CSS("#diff-from"), "1"), chromedp.SetValue(chromedp.CSS("#diff-to"), "2"),
		chromedp.Click(chromedp.CSS("#compare-versions")), chromedp.WaitVisible(chromedp.CSS("#case-diff")))
	if title := p.text("#diff-title"); !strings.Contains(title, "From version 1 to version 2: 1 line added, 1 removed") {
		t.Errorf("the diff's title: %q", title)
	}
	removed := run(p, "removed lines", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#case-diff del')].map(e => e.textContent)`))
	added := run(p, "added lines", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#case-diff ins')].map(e => e.textContent)`))
	if len(removed) != 1 || !strings.Contains(removed[0], `- `) || !strings.Contains(removed[0], `x: "1"`) ||
		len(added) != 1 || !strings.Contains(added[0], `+ `) || !strings.Contains(added[0], `x: "3"`) {
		t.Errorf("removed %q, added %q", removed, added)
	}
	if all := p.text("#case-diff"); !strings.Contains(all, `"y": "2"`) || !strings.Contains(all, "key: a") {
		t.Errorf("the kept lines are not shown: %q", all)
	}
	p.accessible("case-versions")
	p.screenshot("case-versions")
}
