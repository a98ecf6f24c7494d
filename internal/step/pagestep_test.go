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

// TestBodiesMustBeMappings: the steps written as a mapping refuse any
// other body, and keys they do not take, at the body's line and column.
func TestBodiesMustBeMappings(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n    steps:\n"
	for src, want := range map[string]string{
		"      - if: x\n":                    "t.yaml:5:13: if must be a mapping",
		"      - repeat: 3\n":                "t.yaml:5:17: repeat must be a mapping",
		"      - forEach: x\n":               "t.yaml:5:18: forEach must be a mapping",
		"      - mcpCall: x\n":               "t.yaml:5:18: mcpCall must be a mapping",
		"      - repeat: {times: 2, x: 1}\n": `unknown key "x"`,
	} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+src), "t.yaml", compiler.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

// TestPressKeyIsATemplate: press renders its key over the variables in
// both of its forms, so both are checked as templates when they compile: a
// variable that is never set is refused, not left to fail the run.
func TestPressKeyIsATemplate(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n    steps:\n      - open: /\n"
	for _, step := range []string{`press: "${nosuch}"`, `press: {key: "${nosuch}"}`} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+"      - "+step+"\n"), "t.yaml", compiler.Options{})
		if err == nil || !strings.Contains(err.Error(), "t.yaml:6:") || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("%s: got %v, want an error at 6:... about nosuch", step, err)
		}
	}
	_, err := compiler.CompileSuite(t.Context(), []byte(head+"      - set: {k: '\"Enter\"'}\n      - press: \"${k}\"\n"), "t.yaml", compiler.Options{})
	if err != nil {
		t.Errorf("press: ${k} after set: got %v", err)
	}
}
