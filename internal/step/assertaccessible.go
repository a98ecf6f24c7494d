package step

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

// AccessibilityChecker is a Page that runs axe-core (internal/browser's
// sessions do): on the page, or the parts include names less those
// exclude names, with the rules of tags (none: wcag2a and wcag2aa).
type AccessibilityChecker interface {
	CheckAccessibility(ctx context.Context, tags, include, exclude []string) (*duet.AccessibilityResult, error)
}

// impacts ranks axe-core's impacts.
var impacts = map[string]int{"minor": 1, "moderate": 2, "serious": 3, "critical": 4}

// Bounds of what an accessibility check keeps of each violation: the
// elements named, and how much of each one's HTML.
const (
	a11yNodesKept = 10
	a11yHTMLKept  = 300
)

// tagRe is the shape of an axe-core tag (wcag2aa, wcag21a, best-practice,
// EN-301-549, cat.color).
var tagRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$`)

// textList is a list of texts.
var textList = TypeOf("list of texts", func(bool) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
})

// AssertAccessible is the assertAccessible step.
var AssertAccessible = register(&Kind{
	Name:    duet.StepAssertAccessible,
	Section: Browser,
	Order:   240,
	Summary: "Check the page (or a part of it) for accessibility defects with axe-core; violations at or above an impact fail the case.",
	Form: Form{
		Keys: []Key{
			{Name: "tags", Type: textList, Doc: "the axe-core rule tags to run (default `[wcag2a, wcag2aa]`; also wcag21aa, best-practice, ...)"},
			{Name: "include", Type: selectorList, Doc: "CSS selectors of the parts to check (default: the whole page)"},
			{Name: "exclude", Type: selectorList, Doc: "CSS selectors of parts to leave out"},
			{Name: "impact", Type: Enum("minor", "moderate", "serious", "critical"), Doc: "the lowest impact that fails the case (default `serious`)"},
		},
		Null: true,
	},
	Example: "- assertAccessible:\n- assertAccessible: {tags: [wcag2a, wcag2aa], include: [main], exclude: [\"#chat-widget\"], impact: serious}\n",
	Doc: "Runs axe-core " + "(Deque's engine, pinned and embedded in Duet: no download at run time) in the page as it is after the " +
		"steps before. Every violation found is in the step's output — the rule, its impact, the help text and link, and " +
		"the elements (their selector and HTML) — whether or not it fails the case; those at or above `impact` fail it " +
		"with `ASSERTION_FAILED` naming the rules and elements. Rules axe-core cannot decide (to review by hand) are " +
		"counted as `incomplete`.",
	Agent: "`assertAccessible: {impact: serious}` — run axe-core on the page; violations at or above the impact fail (also `tags`, `include`, `exclude`).",
	Compile: evidenceStep(true, func(c *Compiler, n *Node, bd *body, ev *duet.EvidenceStep) {
		ev.Impact = "serious"
		if bd.isShort {
			c.Errf(n, "assertAccessible takes a mapping (tags, include, exclude, impact) or nothing")
			return
		}
		if !bd.isMap {
			return
		}
		c.AllowKeys(n, "tags", "include", "exclude", "impact")
		ev.Tags = c.stringList(n, "tags", "a list", "an axe-core tag")
		for _, t := range ev.Tags {
			if !tagRe.MatchString(t) {
				c.Errf(n.Get("tags"), "tags: %q is not an axe-core tag (wcag2a, wcag2aa, wcag21aa, best-practice, ...)", t)
			}
		}
		ev.Include = c.selectors(n, "include")
		ev.Exclude = c.selectors(n, "exclude")
		if im := c.String(n, "impact", false); im != "" {
			if impacts[im] == 0 {
				c.Errf(n.Get("impact"), "impact must be minor, moderate, serious or critical, got %q", im)
			} else {
				ev.Impact = im
			}
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		ac, err := pageAs[AccessibilityChecker](ctx, env, st, "cannot run axe-core")
		if err != nil {
			return "", nil, err
		}
		ev := st.Evidence
		r, err := ac.CheckAccessibility(ctx, ev.Tags, ev.Include, ev.Exclude)
		if err != nil {
			return "", nil, err
		}
		out, failing := accessibilityOutput(r, ev.Impact)
		if len(failing) == 0 {
			return "", out, nil
		}
		return "", out, duet.Errorf(duet.CodeAssertionFailed, "%d accessibility violation(s) at impact %s or above: %s",
			len(failing), ev.Impact, strings.Join(failing, "; "))
	},
})

// accessibilityOutput is the step's output of r (bounded: the first
// elements of each rule, their HTML cut) and, for the error, a line per
// rule at or above impact.
func accessibilityOutput(r *duet.AccessibilityResult, impact string) (map[string]any, []string) {
	least := impacts[impact]
	var vs []any
	var failing []string
	for _, v := range r.Violations {
		var nodes []any
		var targets []string
		for i, nd := range v.Nodes {
			if i == a11yNodesKept {
				break
			}
			html := nd.HTML
			if len(html) > a11yHTMLKept {
				html = strings.ToValidUTF8(html[:a11yHTMLKept], "") + "…"
			}
			target := strings.Join(nd.Target, " ")
			targets = append(targets, target)
			nodes = append(nodes, map[string]any{"target": target, "html": html, "summary": nd.FailureSummary})
		}
		fails := impacts[v.Impact] >= least
		m := map[string]any{"rule": v.ID, "impact": v.Impact, "help": v.Help, "helpUrl": v.HelpURL, "elements": float64(len(v.Nodes)), "nodes": nodes, "fails": fails}
		vs = append(vs, m)
		if fails {
			line := fmt.Sprintf("%s (%s) on %s", v.ID, v.Impact, strings.Join(targets, ", "))
			if len(v.Nodes) > len(targets) {
				line += fmt.Sprintf(" and %d more", len(v.Nodes)-len(targets))
			}
			failing = append(failing, line)
		}
	}
	if vs == nil {
		vs = []any{}
	}
	return map[string]any{"engine": r.Engine, "url": r.URL, "impact": impact, "violations": vs, "failing": float64(len(failing)),
		"passes": float64(r.Passes), "incomplete": float64(r.Incomplete)}, failing
}

// stringList reads an optional list of non-empty texts at key; an error
// says what the value must be (list) and what each entry must be.
func (c *Compiler) stringList(n *Node, key, list, what string) []string {
	v := n.Get(key)
	if v == nil || v.Type == NullNode {
		return nil
	}
	if v.Type != SeqNode {
		c.Errf(v, "%s must be %s", key, list)
		return nil
	}
	var out []string
	for _, it := range v.Items {
		s, ok := it.Str()
		if !ok || strings.TrimSpace(s) == "" {
			c.Errf(it, "%s: each entry must be %s", key, what)
			continue
		}
		out = append(out, s)
	}
	return out
}
