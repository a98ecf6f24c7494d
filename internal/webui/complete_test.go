package webui_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// TestEditorCompletesFromTheSchema: in Chromium, the suite editor offers
// what the suite format's JSON Schema (served from the binary) allows at
// the caret: the task's keys under task:, the step kinds in a case's
// steps (a click on one writes it), and the values of an enum (extract's
// from).
func TestEditorCompletesFromTheSchema(t *testing.T) {
	t.Parallel()
	chromiumtest.Require(t)
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	if status, body, resp := alice.get("/schema/suite.json"); status != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "json") || !strings.Contains(body, `"$defs"`) {
		t.Fatalf("the schema: %d %s %.200s", status, resp.Header.Get("Content-Type"), body)
	}
	chrome := startChromium(t)
	p := tab(t, chrome, e.URL, t.TempDir(), "alice")
	p.open("/signin")
	p.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]+"\r"), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	p.open("/tasks/apply")
	offered := func(what, text string) []string {
		t.Helper()
		p.do("write "+what, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('source'); s.focus(); s.value = `+jsonText(text)+`; s.setSelectionRange(s.value.length, s.value.length); s.dispatchEvent(new Event('input')); })()`))
		var got []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			got = run(p, "offered", chromedp.Evaluate[[]string](`document.getElementById('source-complete').hidden ? [] : Array.from(document.querySelectorAll('#source-complete [data-complete]')).map(b => b.dataset.complete)`))
			if len(got) > 0 || time.Now().After(deadline) {
				return got
			}
			time.Sleep(100 * time.Millisecond) // the schema may still be loading
		}
	}
	head := "task: {name: t, baseURL: http://127.0.0.1:9}\ncases:\n  - key: a\n    title: A\n    steps:\n"
	if got := offered("a task key", "task:\n  na"); !slices.Equal(got, []string{"name"}) {
		t.Errorf("under task:, 'na' offers %v, want [name]", got)
	}
	if got := offered("a case key", "cases:\n  - key: a\n    ti"); !slices.Contains(got, "title") || slices.Contains(got, "click") {
		t.Errorf("in a case, 'ti' offers %v, want title (and no step kind)", got)
	}
	got := offered("a step kind", head+"      - cl")
	if !slices.Contains(got, "click") || slices.Contains(got, "title") {
		t.Fatalf("in a case's steps, 'cl' offers %v, want click", got)
	}
	p.do("take click", chromedp.Click(chromedp.CSS(`#source-complete [data-complete="click"]`)))
	if v := run(p, "the text", chromedp.Evaluate[string](`document.getElementById('source').value`)); !strings.HasSuffix(v, "      - click: ") {
		t.Errorf("after taking click: %q", v)
	}
	got = offered("extract's from", head+"      - extract:\n          from: ")
	for _, want := range []string{"text", "value", "url.query"} {
		if !slices.Contains(got, want) {
			t.Errorf("extract's from: offers %v, want %s among them", got, want)
		}
	}
	if slices.Contains(got, "selector") {
		t.Errorf("a value offers keys: %v", got)
	}
}
