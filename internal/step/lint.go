package step

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/duet-test/duet"
)

// Finding is a warning about a compiled step: it runs, but it will break
// or slow down for reasons that have nothing to do with what it tests.
type Finding struct {
	Line    int    // the step's line in the suite file
	Step    string // the step's name
	Rule    string
	Message string
}

// Lint rules. Values are wire values: add, never rename.
const (
	// RuleFixedWait: a wait step pauses for a fixed time, too long on a
	// fast machine and too short on a slow one; steps wait for their
	// elements and assertions retry.
	RuleFixedWait = "fixed-wait"
	// RuleLayoutSelector: a CSS selector or an XPath that finds its
	// element by its position in the page's structure (nth-child, a chain
	// of bare tags, an XPath index) breaks when the layout changes.
	RuleLayoutSelector = "layout-selector"
)

// Lint returns the findings of steps, in their order.
func Lint(steps []duet.Step) []Finding {
	var out []Finding
	for _, st := range steps {
		b := st.Browser
		if b == nil {
			continue
		}
		add := func(rule, msg string) {
			out = append(out, Finding{Line: st.Line, Step: st.Name, Rule: rule, Message: msg})
		}
		if st.Kind == "wait" {
			add(RuleFixedWait, "a fixed wait: steps wait for their elements and assertions retry; wait for what you need with waitFor or an assertion")
		}
		check := func(css, xpath string) {
			if why := LayoutSelector(css); why != "" {
				add(RuleLayoutSelector, fmt.Sprintf("CSS selector %q %s: name the element by its role and name, label or text (or a test id)", css, why))
			}
			if xpathIndex().MatchString(xpath) {
				add(RuleLayoutSelector, fmt.Sprintf("XPath %q finds the element by its position: name it by its role and name, label or text (or a test id)", xpath))
			}
		}
		check(b.Selector, "")
		var walk func(l *duet.Locator)
		walk = func(l *duet.Locator) {
			if l == nil {
				return
			}
			check(l.CSS, l.XPath)
			walk(l.Within)
			walk(l.Has)
		}
		walk(b.Locator)
		walk(b.To)
		for _, f := range b.Frame {
			walk(f)
		}
	}
	return out
}

var (
	positional = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`:(nth-child|nth-last-child|nth-of-type|nth-last-of-type|first-child|last-child|first-of-type|last-of-type|only-child)\b`)
	})
	bareTag     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*$`) })
	xpathIndex  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/[A-Za-z*][\w-]*\[\d+\]`) })
	combinators = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s*[>+~]\s*|\s+`) })
)

// LayoutSelector says why a CSS selector is tied to the layout of the page
// ("" when it is not): a positional pseudo-class (nth-child, first-child,
// ...), or a chain of three or more bare tags (div > div > span), or one
// that starts at html or body.
func LayoutSelector(css string) string {
	css = strings.TrimSpace(css)
	if css == "" || !IsTemplateFree(css) {
		return ""
	}
	if m := positional().FindString(css); m != "" {
		return "picks by position (" + m + ")"
	}
	for _, alt := range strings.Split(css, ",") {
		parts := combinators().Split(strings.TrimSpace(alt), -1)
		bare := 0
		for _, p := range parts {
			if bareTag().MatchString(p) {
				bare++
			}
		}
		if len(parts) >= 3 && bare == len(parts) {
			return "is a chain of bare tags"
		}
		if len(parts) >= 2 && (parts[0] == "html" || parts[0] == "body") {
			return "starts at " + parts[0]
		}
	}
	return ""
}

// IsTemplateFree reports whether s has no ${...} part (a selector decided
// at run time is not judged).
func IsTemplateFree(s string) bool { return !strings.Contains(s, "${") }
