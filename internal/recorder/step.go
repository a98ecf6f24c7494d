package recorder

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
)

// Step is one recorded step: a kind of the suite format, the element's
// locator, and the kind's value (the URL of open, the text of fill, the
// option of select, the key of press, the expected text of assertText and
// assertURL).
type Step struct {
	Kind    string        `json:"kind"`
	Locator *duet.Locator `json:"locator,omitempty"`
	Value   string        `json:"value,omitempty"`
}

// Step kinds the recorder writes: all of them ordinary kinds of the suite
// format, so that a recorded case is a case like any other.
const (
	KindOpen          = "open"
	KindClick         = "click"
	KindFill          = "fill"
	KindSelect        = "select"
	KindCheck         = "check"
	KindUncheck       = "uncheck"
	KindPress         = "press"
	KindAssertVisible = "assertVisible"
	KindAssertText    = "assertText"
	KindAssertURL     = "assertURL"
)

// valueKey is the key of a kind's value in its mapping ("" for none).
var valueKey = map[string]string{
	KindFill: "value", KindSelect: "value", KindPress: "key", KindAssertText: "equals", KindAssertURL: "contains",
}

// lit writes s as a YAML scalar: JSON's double-quoted string (which YAML
// reads as the same text), with "${" escaped as "$${" so that a recorded
// text is never read as a template.
func lit(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(strings.ReplaceAll(s, "${", "$${"))
	return strings.TrimSuffix(b.String(), "\n")
}

// locatorFields writes a locator's keys, in the suite format's words.
func locatorFields(l *duet.Locator) []string {
	var f []string
	add := func(k, v string) {
		if v != "" {
			f = append(f, k+": "+lit(v))
		}
	}
	add("selector", l.CSS)
	add("role", l.Role)
	add("name", l.Name)
	add("text", l.Text)
	add("label", l.Label)
	add("placeholder", l.Placeholder)
	add("alt", l.Alt)
	add("title", l.Title)
	add("testId", l.TestID)
	add("hasText", l.HasText)
	if l.Exact {
		f = append(f, "exact: true")
	}
	if l.Nth != nil {
		f = append(f, fmt.Sprintf("nth: %d", *l.Nth))
	}
	if l.Within != nil {
		f = append(f, "within: {"+strings.Join(locatorFields(l.Within), ", ")+"}")
	}
	return f
}

// YAML writes the step as an item of a case's steps, indented by indent.
func (s Step) YAML(indent string) string {
	if s.Kind == KindOpen {
		return indent + "- open: " + lit(s.Value) + "\n"
	}
	var f []string
	if s.Locator != nil {
		f = locatorFields(s.Locator)
	}
	if k := valueKey[s.Kind]; k != "" {
		if s.Kind == KindPress {
			f = append([]string{k + ": " + lit(s.Value)}, f...)
		} else {
			f = append(f, k+": "+lit(s.Value))
		}
	}
	return indent + "- " + s.Kind + ": {" + strings.Join(f, ", ") + "}\n"
}

// CaseYAML writes a case of steps as an item of a suite's cases (the form
// compiler.CompileCase and the apply path read).
func CaseYAML(key, title string, steps []Step) string {
	var b strings.Builder
	b.WriteString("key: " + lit(key) + "\n")
	b.WriteString("title: " + lit(title) + "\n")
	b.WriteString("steps:\n")
	for _, s := range steps {
		b.WriteString(s.YAML("  "))
	}
	return b.String()
}
