package step

import (
	"strings"

	"github.com/duet-test/duet/internal/eval"

	"github.com/andybalholm/cascadia"
	"github.com/antchfx/xpath"
)

// selectorProblem says why a CSS selector cannot parse, or "" when it can
// (or when only the browser can tell). It is checked at compile time so a
// typo fails at its line:col, not in the page at run time.
//
// The parser (cascadia) knows fewer pseudo-classes than a browser and no
// relative selectors inside :has() or namespaces: a selector it refuses for
// one of those is left to the browser, never refused here.
func selectorProblem(s string) string {
	if strings.Contains(s, ":has(") || strings.Contains(s, "|") {
		return ""
	}
	_, err := cascadia.ParseGroupWithPseudoElements(s)
	if err == nil || strings.Contains(err.Error(), "unknown pseudoclass") {
		return ""
	}
	return err.Error()
}

// xpathProblem says why an XPath expression cannot parse, or "" when it can.
func xpathProblem(s string) string {
	if _, err := xpath.Compile(s); err != nil {
		return err.Error()
	}
	return ""
}

// checkSyntax refuses, at n's line:col, a CSS selector (key "selector") or
// an XPath (key "xpath") that cannot parse. A template is checked at run
// time, once its values are known.
func (c *Compiler) checkSyntax(n *Node, key, s string) {
	if s == "" || eval.IsTemplate(s) {
		return
	}
	switch key {
	case "selector":
		if msg := selectorProblem(s); msg != "" {
			c.Errf(n, "the CSS selector %q does not parse: %s", s, msg)
		}
	case "xpath":
		if msg := xpathProblem(s); msg != "" {
			c.Errf(n, "the XPath %q does not parse: %s", s, msg)
		}
	}
}
