package duet

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// String names a locator in a message, as the suite format writes it:
// "#buy" (a CSS selector), role=button[name="Sign in"], text="Welcome"
// within "#cart", ...
func (l *Locator) String() string {
	var b strings.Builder
	describeLocator(&b, l)
	return b.String()
}

func describeLocator(b *strings.Builder, l *Locator) {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	switch {
	case l.CSS != "":
		b.WriteString(q(l.CSS))
	case l.XPath != "":
		b.WriteString("xpath=" + q(l.XPath))
	case l.Role != "":
		b.WriteString("role=" + l.Role)
		if l.Name != "" {
			b.WriteString("[name=" + q(l.Name) + "]")
		}
	case l.Text != "":
		b.WriteString("text=" + q(l.Text))
	case l.Label != "":
		b.WriteString("label=" + q(l.Label))
	case l.Placeholder != "":
		b.WriteString("placeholder=" + q(l.Placeholder))
	case l.Alt != "":
		b.WriteString("alt=" + q(l.Alt))
	case l.Title != "":
		b.WriteString("title=" + q(l.Title))
	case l.TestID != "":
		attr := l.TestIDAttr
		if attr == "" {
			attr = "data-testid"
		}
		b.WriteString(attr + "=" + q(l.TestID))
	default:
		b.WriteString("*")
	}
	if l.Exact {
		b.WriteString(" (exact)")
	}
	if l.HasText != "" {
		b.WriteString(" with text " + q(l.HasText))
	}
	if l.Has != nil {
		b.WriteString(" that has ")
		describeLocator(b, l.Has)
	}
	if l.Nth != nil {
		fmt.Fprintf(b, " nth=%d", *l.Nth)
	}
	if l.Within != nil {
		b.WriteString(" within ")
		describeLocator(b, l.Within)
	}
}

// Check checks one level of a locator (not its Within and Has): one base
// at most, a name only with a role, a role that is an ARIA role, nth within
// bounds, regular expressions that compile. Text values that are templates
// are checked once rendered. Returns INVALID_ARGUMENT.
func (l *Locator) Check() error {
	bases := 0
	for _, s := range []string{l.CSS, l.XPath, l.Role, l.Text, l.Label, l.Placeholder, l.Alt, l.Title, l.TestID} {
		if s != "" {
			bases++
		}
	}
	switch {
	case bases > 1:
		return Errorf(CodeInvalidArgument, "a locator has one of css, xpath, role, text, label, placeholder, alt, title, testId; %s has %d", l.String(), bases)
	case bases == 0 && l.Within == nil && l.Has == nil && l.HasText == "":
		return Errorf(CodeInvalidArgument, "the locator is empty")
	case l.Name != "" && l.Role == "":
		return Errorf(CodeInvalidArgument, "name goes with role")
	case l.Role != "" && !IsRole(l.Role):
		return Errorf(CodeInvalidArgument, "%q is not an ARIA role such as button, link, heading, textbox, checkbox, listitem, row, dialog", l.Role)
	case l.Nth != nil && (*l.Nth > MaxNth || *l.Nth < -MaxNth):
		return Errorf(CodeInvalidArgument, "nth %d is beyond ±%d", *l.Nth, MaxNth)
	}
	for _, s := range []string{l.Name, l.Text, l.Label, l.Placeholder, l.Alt, l.Title, l.TestID, l.HasText} {
		if strings.Contains(s, "${") {
			continue // a template: checked when rendered
		}
		if err := CheckPattern(s); err != nil {
			return err
		}
	}
	return nil
}

// MaxNth bounds Nth.
const MaxNth = 10000

// patternRe is how a regular expression is written in a text value.
var patternRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^/(.+)/([ims]*)$`) })

// Pattern splits a text value written /PATTERN/FLAGS; ok is false for a
// plain text.
func Pattern(s string) (pattern, flags string, ok bool) {
	m := patternRe().FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// CheckPattern returns INVALID_ARGUMENT when s is written as a regular
// expression that does not compile. The page runs it as a JavaScript
// regular expression; the check is Go's (RE2), so write the syntax both
// share: classes, groups, alternatives, repeats, anchors.
func CheckPattern(s string) error {
	p, flags, ok := Pattern(s)
	if !ok {
		return nil
	}
	if flags != "" {
		p = "(?" + flags + ")" + p
	}
	if _, err := regexp.Compile(p); err != nil {
		return Errorf(CodeInvalidArgument, "invalid regular expression %s: %v", s, err)
	}
	return nil
}

// Roles are the ARIA roles a locator can name (presentation and none are
// not in the accessibility tree, so nothing has them).
var Roles = []string{
	"alert", "alertdialog", "application", "article", "banner", "blockquote", "button", "caption", "cell",
	"checkbox", "code", "columnheader", "combobox", "complementary", "contentinfo", "definition", "deletion",
	"dialog", "directory", "document", "emphasis", "feed", "figure", "form", "generic", "grid", "gridcell",
	"group", "heading", "img", "insertion", "link", "list", "listbox", "listitem", "log", "main", "marquee",
	"math", "meter", "menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio", "navigation", "note",
	"option", "paragraph", "progressbar", "radio", "radiogroup", "region", "row", "rowgroup", "rowheader",
	"scrollbar", "search", "searchbox", "separator", "slider", "spinbutton", "status", "strong", "subscript",
	"superscript", "switch", "tab", "table", "tablist", "tabpanel", "term", "textbox", "time", "timer",
	"toolbar", "tooltip", "tree", "treegrid", "treeitem",
}

// IsRole reports whether role is one of Roles.
func IsRole(role string) bool {
	for _, r := range Roles {
		if r == role {
			return true
		}
	}
	return false
}
