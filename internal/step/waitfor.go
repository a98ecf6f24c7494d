package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

var waitForForm = Form{
	Short: &Short{Type: Text, Doc: "a CSS selector"},
	Keys: append([]Key{
		{Name: "selector", Type: Template, Doc: "CSS selector of an element that must be there"},
		{Name: "text", Type: Template, Doc: "text that must appear on the page (in the element, with selector alone)"},
		{Name: "urlContains", Type: Template, Doc: "a part of the page URL"},
		{Name: "urlMatches", Type: Template, Doc: "a regular expression (RE2) the page URL matches"},
		{Name: "visible", Type: Bool, Doc: "the element must be visible"},
	}, withoutKey(withoutKey(locatorKeys, "selector"), "text")...),
	AtLeastOne: []string{"selector", "text", "urlContains", "urlMatches", "role", "label", "placeholder", "alt", "title", "testId", "xpath", "within", "has", "hasText"},
}

// WaitFor is the waitFor step.
var WaitFor = register(&Kind{
	Name:    duet.StepWaitFor,
	Section: Browser,
	Order:   160,
	Summary: "Wait until an element, a text or a URL is there; every condition given must hold at once.",
	Form:    waitForForm,
	Example: "- waitFor: \"#status\"\n- waitFor: {selector: \"#welcome\", visible: true}\n- waitFor: {urlContains: \"welcome=\"}\n- waitFor: {role: dialog, name: Cart, visible: true}\n",
	Doc: "With a locator other than selector alone (role, label, ...), text is a text of the page; " +
		"an element step waits for its own element anyway: waitFor is for what no step acts on.",
	Agent: "`waitFor: {role: dialog, visible: true}` or `waitFor: {selector | text | urlContains | urlMatches: ..., visible: true}`",
	Compile: pageStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		b := bd.b
		if !bd.isMap {
			b.Selector = bd.short
			c.checkSyntax(n, "selector", b.Selector)
			return
		}
		c.AllowKeys(n, waitForForm.KeyNames()...)
		b.Text = bd.field("text", false)
		b.URLContains, b.URLMatches = bd.field("urlContains", false), bd.field("urlMatches", false)
		bd.checkRegexp("urlMatches", b.URLMatches)
		b.Visible = bd.bool("visible")
		located := false
		for _, k := range waitForForm.Keys[5:] {
			if n.Get(k.Name) != nil {
				located = true
			}
		}
		if located {
			b.Locator = c.locatorMap(n, 0, false, "waitFor", "text")
		} else {
			b.Selector = bd.field("selector", false)
			c.checkSyntax(n.Get("selector"), "selector", b.Selector)
		}
		if b.Selector == "" && b.Locator == nil && b.Text == "" && b.URLContains == "" && b.URLMatches == "" {
			c.Errf(n, "waitFor needs selector (or another locator), text, urlContains or urlMatches")
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		visible := b.Visible != nil && *b.Visible
		if b.Locator != nil {
			if err := waitElement(ctx, env, st, visible); err != nil {
				return "", nil, err
			}
			visible, sel = false, ""
		}
		c := WaitCondition{Selector: sel, Visible: visible}
		if c.Text, err = renderOpt(env, b.Text); err != nil {
			return "", nil, err
		}
		if c.URLContains, err = renderOpt(env, b.URLContains); err != nil {
			return "", nil, err
		}
		if c.URLMatches, err = renderOpt(env, b.URLMatches); err != nil {
			return "", nil, err
		}
		if c.Selector == "" && c.Text == "" && c.URLContains == "" && c.URLMatches == "" {
			return "", nil, nil
		}
		if dl, ok := ctx.Deadline(); ok {
			c.Timeout = time.Until(dl)
		}
		return "", nil, p.WaitFor(ctx, c)
	},
})

// waitElement waits, within the step's time, until the element of the
// step's locator is there (and visible), looking again as the page changes.
func waitElement(ctx context.Context, env Env, st *duet.Step, visible bool) error {
	el, t, err := elements(ctx, env, st)
	if err != nil {
		return err
	}
	q := Query{Kind: "count"}
	if visible {
		q.Kind = "visible"
	}
	for wait := time.Duration(0); ; wait = pageWait {
		q.Wait = wait
		a, err := el.Query(ctx, t, q)
		switch {
		case err != nil && ctx.Err() == nil && !pastDeadline(ctx):
			return err
		case err == nil && (a.Has || (!visible && a.Count > 0)):
			return nil
		case ctx.Err() != nil || pastDeadline(ctx):
			what := "there"
			if visible {
				what = "visible"
			}
			return duet.Errorf(duet.CodeStepTimeout, "waitFor: %s is not %s", t, what)
		}
	}
}
