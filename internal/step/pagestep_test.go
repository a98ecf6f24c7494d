package step_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/compiler"
)

// TestPageStepsNeedAPage: a step that acts on the page, written before any
// open, is refused at its line and column; the steps that set the browser
// up (open, emulate, route, onDialog) are not.
func TestPageStepsNeedAPage(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n    steps:\n"
	for _, step := range []string{
		"press: Enter", "evaluate: document.title", "waitFor: '#x'", "assertDialog: Delete?",
		"screenshot: home", "waitForPopup:", "switchTo: 1", "assertTitle: Shop", "assertURL: /shop",
		"extract: {selector: '#x', as: v}",
	} {
		kind := step[:strings.Index(step, ":")]
		_, err := compiler.CompileSuite(t.Context(), []byte(head+"      - "+step+"\n"), "t.yaml", compiler.Options{})
		if want := "t.yaml:5:"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), kind+" needs a page") {
			t.Errorf("%s before open: got %v, want %s... %s needs a page", step, err, want, kind)
		}
	}
	for _, step := range []string{
		"open: /", "emulate: {locale: de-DE}", "route: {url: '**/api', json: []}", "onDialog: accept",
	} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+"      - "+step+"\n"), "t.yaml", compiler.Options{})
		if err != nil && strings.Contains(err.Error(), "needs a page") {
			t.Errorf("%s first: got %v", step, err)
		}
	}
}
