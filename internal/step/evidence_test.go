package step

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseBudget: budgets are read as written, in milliseconds for the
// timings; a unit on cls, an unknown metric or a malformed budget is
// refused.
func TestParseBudget(t *testing.T) {
	for _, c := range []struct {
		metric, text string
		want         Budget
		err          string
	}{
		{"lcp", "< 2500ms", Budget{"lcp", "<", 2500}, ""},
		{"lcp", "<= 2.5s", Budget{"lcp", "<=", 2500}, ""},
		{"ttfb", "800", Budget{"ttfb", "<=", 800}, ""},
		{"cls", "< 0.1", Budget{"cls", "<", 0.1}, ""},
		{"load", ">= 10ms", Budget{"load", ">=", 10}, ""},
		{"cls", "< 0.1s", Budget{}, "unitless"},
		{"lcp", "fast", Budget{}, "want a budget"},
		{"lcp", "< -5ms", Budget{}, "want a budget"},
		{"speed", "< 1s", Budget{}, "unknown metric"},
	} {
		got, err := ParseBudget(c.metric, c.text)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: %v, want an error with %q", c.metric, c.text, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q: %+v %v, want %+v", c.metric, c.text, got, err, c.want)
		}
	}
	b := Budget{"lcp", "<", 2500}
	if !b.holds(2499) || b.holds(2500) {
		t.Errorf("< 2500: holds(2499)=%v holds(2500)=%v", b.holds(2499), b.holds(2500))
	}
}

// TestEvidenceKindsCompile: the evidence kinds' mistakes are reported at
// their line; their defaults are set.
func TestEvidenceKindsCompile(t *testing.T) {
	steps, diags := compileSteps(t, "- assertAccessible:\n- assertPerformance: {lcp: \"< 2.5s\", cls: \"< 0.1\"}\n")
	if len(diags) != 0 || steps[0].Evidence.Impact != "serious" || steps[1].Evidence.Budgets["lcp"] != "< 2.5s" {
		t.Fatalf("got %+v %v", steps, diags)
	}
	for src, want := range map[string]string{
		"- assertAccessible: {impact: high}":                    "impact must be minor, moderate, serious or critical",
		"- assertAccessible: {tags: [\"wcag 2a\"]}":             "is not an axe-core tag",
		"- assertAccessible: {include: \"#main\"}":              "include must be a list of CSS selectors",
		"- assertAccessible: everything":                        "takes a mapping",
		"- assertAccessible: {rules: [x]}":                      "rules",
		"- assertPerformance: {cls: \"< 0.1ms\"}":               "unitless",
		"- assertPerformance: {speed: \"< 1s\"}":                "speed",
		"- assertPerformance: {lcp: soon}":                      "want a budget",
		"- assertScreenshot: {locator: \"#x\"}":                 "name",
		"- assertScreenshot: {name: a, maxDiffPixelRatio: 1.5}": "from 0 to 1",
	} {
		_, diags := compileSteps(t, src+"\n")
		if len(diags) == 0 || !strings.Contains(fmt.Sprint(diags), want) || !strings.Contains(fmt.Sprint(diags), "1:") {
			t.Errorf("%s: %v, want an error with %q", src, diags, want)
		}
	}
}
