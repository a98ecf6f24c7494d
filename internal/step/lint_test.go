package step

import (
	"strings"
	"testing"
)

// TestLint: fixed waits and selectors tied to the layout are found, at
// their lines; locators that name elements as a person does are not.
func TestLint(t *testing.T) {
	t.Parallel()
	steps, diags := compileSteps(t, `- wait: 500ms
- click: "div > div:nth-child(3)"
- click: {role: button, name: Pay, within: "main > div > section"}
- fill: {selector: "body > form input", value: x}
- click: {xpath: "//table/tbody/tr[2]/td[1]"}
- click: "#buy"
- click: {role: button, name: Pay}
- click: {selector: ".card", hasText: Blue}
- assertText: {selector: "li:first-child", equals: x}
- dragTo: {text: a, to: "ul > li > div"}
`)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	got := Lint(steps)
	var lines []string
	for _, f := range got {
		lines = append(lines, f.Rule+"@"+string(rune('0'+steps[f.Line-1].Index)))
	}
	want := []string{"fixed-wait@0", "layout-selector@1", "layout-selector@2", "layout-selector@3", "layout-selector@4", "layout-selector@8", "layout-selector@9"}
	if strings.Join(lines, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", lines, want)
		for _, f := range got {
			t.Log(f)
		}
	}
	if LayoutSelector("button.primary") != "" || LayoutSelector("[data-testid=pay]") != "" || LayoutSelector("nav a") != "" {
		t.Error("a selector by class, attribute or a short descendant chain is not tied to the layout")
	}
}
