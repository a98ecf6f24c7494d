package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// WaitFor is the waitFor step.
var WaitFor = register(&Kind{
	Name:    duet.StepWaitFor,
	Section: Browser,
	Order:   160,
	Summary: "Wait until an element, a text or a URL is there; every condition given must hold at once.",
	Form: Form{
		Short: &Short{Type: Text, Doc: "a CSS selector"},
		Keys: []Key{
			{Name: "selector", Type: Template, Doc: "CSS selector of an element that must be there"},
			{Name: "text", Type: Template, Doc: "text that must appear on the page (in the element, with selector)"},
			{Name: "urlContains", Type: Template, Doc: "a part of the page URL"},
			{Name: "urlMatches", Type: Template, Doc: "a regular expression (RE2) the page URL matches"},
			{Name: "visible", Type: Bool, Doc: "the element of selector must be visible"},
		},
		AtLeastOne: []string{"selector", "text", "urlContains", "urlMatches"},
	},
	Example: "- waitFor: \"#status\"\n- waitFor: {selector: \"#welcome\", visible: true}\n- waitFor: {urlContains: \"welcome=\"}\n",
	Agent:   "`waitFor: \"#status\"` or `waitFor: {selector | text | urlContains | urlMatches: ..., visible: true}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := browserBody(c, st, n, false)
		if !ok {
			return
		}
		bd.needPage()
		b := bd.b
		if !bd.isMap {
			b.Selector = bd.short
			return
		}
		c.AllowKeys(n, "selector", "text", "urlContains", "urlMatches", "visible")
		b.Selector, b.Text = bd.field("selector", false), bd.field("text", false)
		b.URLContains, b.URLMatches = bd.field("urlContains", false), bd.field("urlMatches", false)
		bd.checkRegexp("urlMatches", b.URLMatches)
		b.Visible = bd.bool("visible")
		if b.Selector == "" && b.Text == "" && b.URLContains == "" && b.URLMatches == "" {
			c.Errf(n, "waitFor needs selector, text, urlContains or urlMatches")
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		c := WaitCondition{Selector: sel, Visible: b.Visible != nil && *b.Visible}
		if c.Text, err = renderOpt(env, b.Text); err != nil {
			return "", nil, err
		}
		if c.URLContains, err = renderOpt(env, b.URLContains); err != nil {
			return "", nil, err
		}
		if c.URLMatches, err = renderOpt(env, b.URLMatches); err != nil {
			return "", nil, err
		}
		if dl, ok := ctx.Deadline(); ok {
			c.Timeout = time.Until(dl)
		}
		return "", nil, p.WaitFor(ctx, c)
	},
})
