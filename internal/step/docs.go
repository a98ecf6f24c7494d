package step

import (
	"fmt"
	"strings"
)

// sections are the groups of kinds in the docs, with what they say of all
// their kinds.
var sections = []struct {
	Section Section
	Title   string // docs/suite-format.md
	Agent   string // the agent's format reference
	Doc     string
}{
	{Data, "Data steps", "Data steps", ""},
	{Flow, "Flow steps", "Flow steps (conditions, loops, reusable flows)",
		"Flow steps run other steps: `if` one list or another, `repeat` and `forEach` a list again and again " +
			"(never more than their `max` iterations: past it the step fails with `LOOP_LIMIT`), `use` a reusable " +
			"flow. Each step they run has its own timeout and result; the report shows those results under the " +
			"flow step, with the loop iteration each ran in, and a run in progress shows the iteration it is at. " +
			"A step inside fails the flow step (and the case) as it would on its own; variables saved inside are " +
			"seen after it. A flow step's own `timeout`, when it has one, bounds all it runs."},
	{Browser, "Browser steps", "Browser steps",
		"Browser steps run in headless Chromium (or the task's device: docs/devices.md), one isolated browser " +
			"context per case execution. A step names its element with a locator (see Locators above): a role and " +
			"a name, a text, a label, ... or a CSS selector. A step that acts on an element waits, within its " +
			"timeout, until the element can take the action: attached, visible, stable, enabled, not covered, " +
			"editable for a field. Every assertion (`assert...`) retries until it holds, for up to 5 s or the " +
			"step's own `timeout`, so content that arrives late (after a fetch, an animation) does not fail the " +
			"case; `not: true` asserts the opposite, and `soft: true` (beside the kind, as `timeout`) records a " +
			"failure and lets the case go on (it fails at its end). A failed browser step leaves a screenshot of " +
			"the page in the run's report (`duet report RUN_ID`)."},
}

// Reference returns the step kinds' reference in Markdown, for
// docs/suite-format.md: a table of every kind, then each kind with its
// example, its keys and its notes.
func Reference() string {
	var b strings.Builder
	b.WriteString("| Kind | What it does |\n|---|---|\n")
	for _, k := range sorted() {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", k.Name, strings.ToLower(string(k.Name)), k.Summary)
	}
	for _, sec := range sections {
		fmt.Fprintf(&b, "\n### %s\n", sec.Title)
		if sec.Doc != "" {
			b.WriteString("\n" + wrap(sec.Doc) + "\n")
		}
		for _, k := range sorted() {
			if k.Section == sec.Section {
				b.WriteString("\n" + k.reference())
			}
		}
	}
	return b.String()
}

// reference documents one kind.
func (k *Kind) reference() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s\n\n%s\n\n```yaml\n%s```\n", k.Name, wrap(k.Summary), k.Example)
	f := k.Form
	var forms []string
	if f.Short != nil {
		forms = append(forms, fmt.Sprintf("`%s: %s` (%s)", k.Name, strings.ToUpper(f.Short.Type.Name), f.Short.Doc))
	}
	if f.Keys != nil {
		forms = append(forms, fmt.Sprintf("`%s: {...}` with the keys below", k.Name))
	}
	if f.Open != nil {
		forms = append(forms, fmt.Sprintf("`%s: {NAME: %s, ...}`: %s", k.Name, strings.ToUpper(f.Open.Type.Name), f.Open.Doc))
	}
	if f.List != nil {
		forms = append(forms, fmt.Sprintf("`%s: [%s, ...]` (%s)", k.Name, strings.ToUpper(f.List.Type.Name), f.List.Doc))
	}
	if f.Null {
		forms = append(forms, fmt.Sprintf("`%s:` alone", k.Name))
	}
	b.WriteString("\nForms: " + strings.Join(forms, "; or ") + ".\n")
	if len(f.Keys) > 0 {
		b.WriteString("\n| Key | Type | |\n|---|---|---|\n")
		var loc []string
		flush := func() {
			if len(loc) > 0 {
				fmt.Fprintf(&b, "| %s | locator | the element: see [Locators](#locators) |\n", codes(loc))
				loc = nil
			}
		}
		for _, key := range f.Keys {
			if key.locator {
				loc = append(loc, key.Name)
				continue
			}
			flush()
			typ := key.Type.Name
			if key.Required {
				typ += ", required"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", key.Name, typ, key.Doc)
		}
		flush()
	}
	var rules []string
	if len(f.ExactlyOne) > 0 {
		rules = append(rules, "exactly one of "+codes(f.ExactlyOne))
	}
	if len(f.AtLeastOne) > 0 {
		rules = append(rules, "at least one of "+codes(f.AtLeastOne))
	}
	for _, w := range f.When {
		rules = append(rules, fmt.Sprintf("`%s: %s` needs %s", w.Key, strings.Join(w.In, "|"), codes(w.Require)))
	}
	if len(rules) > 0 {
		b.WriteString("\nThe mapping needs " + strings.Join(rules, "; ") + ".\n")
	}
	if k.Doc != "" {
		b.WriteString("\n" + wrap(k.Doc) + "\n")
	}
	return b.String()
}

func codes(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return strings.Join(out, ", ")
}

// AgentReference returns the step kinds' entries of the agent's format
// reference (internal/agent/format.md), in Markdown: the browser steps
// first, as the model mostly writes them.
func AgentReference() string {
	var b strings.Builder
	for i := range sections {
		sec := sections[len(sections)-1-i]
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "## %s\n", sec.Agent)
		for _, k := range sorted() {
			if k.Section == sec.Section {
				b.WriteString("- " + k.Agent + "\n")
			}
		}
	}
	return b.String()
}

// wrap folds each paragraph of s (lines between blank lines) at about 100
// columns; fenced code blocks are left alone.
func wrap(s string) string {
	var out, para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		var cur strings.Builder
		for _, w := range strings.Fields(strings.Join(para, " ")) {
			if cur.Len() > 0 && cur.Len()+1+len(w) > 100 {
				out = append(out, cur.String())
				cur.Reset()
			}
			if cur.Len() > 0 {
				cur.WriteByte(' ')
			}
			cur.WriteString(w)
		}
		out = append(out, cur.String())
		para = nil
	}
	code := false
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			flush()
			code = !code
			out = append(out, line)
		case code:
			out = append(out, line)
		case strings.TrimSpace(line) == "":
			flush()
			out = append(out, "")
		default:
			para = append(para, line)
		}
	}
	flush()
	return strings.Join(out, "\n")
}
