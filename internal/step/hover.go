package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Hoverer is a Page that can hover over an element: move the mouse over
// its centre once it is visible and not covered by another element,
// scrolled into view. internal/browser's Chromium sessions are Hoverers
// (local, remote and on Android phones). Errors are those of Page.Click.
type Hoverer interface {
	Hover(ctx context.Context, selector string) error
}

// Hover is the hover step.
var Hover = register(&Kind{
	Name:    "hover",
	Section: Browser,
	Order:   120,
	Summary: "Move the mouse over an element: wait until it is visible and not covered, then hover its centre (menus and tooltips that open on hover).",
	Form: Form{
		Short: &Short{Type: Template, Doc: "the CSS selector"},
		Keys:  []Key{selectorKey},
	},
	Example: "- hover: \"#account-menu\"\n",
	Agent:   "`hover: \"#account-menu\"` — move the mouse over an element (menus that open on hover).",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileSelector(c, st, n, []string{"selector"})
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, _, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		h, ok := p.(Hoverer)
		if !ok {
			return "", nil, duet.Errorf(duet.CodeBrowserError, "hover: this browser cannot hover (its driver lacks Hover)")
		}
		return "", nil, h.Hover(ctx, sel)
	},
})
