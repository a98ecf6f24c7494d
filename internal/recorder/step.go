package recorder

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
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

// lit writes s as a YAML scalar that reads as s: a literal template
// (step.Literal), quoted.
func lit(s string) string { return quote(step.Literal(s)) }

// quote writes s as a YAML scalar: JSON's double-quoted string, which YAML
// reads as the same text.
func quote(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// locatorFields writes a locator's keys, in the suite format's words
// (step.LocatorYAML: its texts literals), as the items of a flow mapping.
func locatorFields(l *duet.Locator) []string {
	return flowItems(step.LocatorYAML(l))
}

// flowItems writes the items of m as a flow mapping's "key: value"; its
// strings are already templates (step.LocatorYAML wrote them).
func flowItems(m yaml.MapSlice) []string {
	f := make([]string, 0, len(m))
	for _, it := range m {
		var v string
		switch x := it.Value.(type) {
		case string:
			v = quote(x)
		case yaml.MapSlice:
			v = "{" + strings.Join(flowItems(x), ", ") + "}"
		default:
			v = fmt.Sprint(x)
		}
		f = append(f, fmt.Sprint(it.Key)+": "+v)
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
