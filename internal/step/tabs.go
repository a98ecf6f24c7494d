package step

import (
	"context"
	"fmt"

	"github.com/duet-test/duet"
)

// Tabs is a Page with the tabs its pages open (popups, links with
// target=_blank). internal/browser's sessions are Tabs.
type Tabs interface {
	// WaitForPopup waits for a tab opened that no earlier wait took and
	// makes it current; it returns its number (1 the first tab).
	WaitForPopup(ctx context.Context) (int, error)
	// SwitchTab makes the tab numbered n current, or, with n 0, the first
	// whose URL contains urlContains.
	SwitchTab(ctx context.Context, n int, urlContains string) (int, error)
	// CloseTab closes the current tab (not the first); its opener becomes
	// current.
	CloseTab(ctx context.Context) error
}

func tabs(ctx context.Context, env Env, st *duet.Step) (Tabs, *duet.BrowserStep, error) {
	t, err := pageAs[Tabs](ctx, env, st, "cannot follow tabs (its driver lacks Tabs)")
	return t, st.Browser, err
}

// WaitForPopup is the waitForPopup step.
var WaitForPopup = register(&Kind{
	Name:    "waitForPopup",
	Section: Browser,
	Order:   107,
	Summary: "Wait for the tab a step before opened (window.open, a link with target=_blank) and act in it from now on; saves its number.",
	Form: Form{
		Null: true,
		Keys: []Key{{Name: "as", Type: Ident, Doc: "a variable to save the tab's number to"}},
	},
	Example: "- waitForPopup:\n- waitForPopup: {as: helpTab}\n",
	Doc:     "It takes the first tab opened that no earlier `waitForPopup` took, even one that opened before it; none within the step's timeout fails the step (STEP_TIMEOUT). A tab at an address the network guard refuses fails it with URL_REFUSED.",
	Agent:   "`waitForPopup:` after the click that opens a tab; then `closeTab:` or `switchTo: 1`",
	Compile: pageStep(true, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if bd.isShort {
			c.Errf(n, "waitForPopup takes nothing, or {as: VAR}")
		}
		if bd.isMap {
			c.AllowKeys(n, "as")
			bd.b.SaveAs = c.SaveAs(n.Get("as"))
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		t, b, err := tabs(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		n, err := t.WaitForPopup(ctx)
		if err != nil {
			return "", nil, err
		}
		return b.SaveAs, float64(n), nil
	},
})

// SwitchTo is the switchTo step.
var SwitchTo = register(&Kind{
	Name:    "switchTo",
	Section: Browser,
	Order:   108,
	Summary: "Act in another tab from now on: by its number (1 the first) or by a part of its URL.",
	Form: Form{
		Short:      &Short{Type: Int, Doc: "the tab's number"},
		Keys:       []Key{{Name: "tab", Type: Int, Doc: "the tab's number, 1 the first"}, {Name: "urlContains", Type: Template, Doc: "a part of the tab's URL"}},
		ExactlyOne: []string{"tab", "urlContains"},
	},
	Example: "- switchTo: 1\n- switchTo: {urlContains: /help}\n",
	Agent:   "`switchTo: 1` (the first tab) or `switchTo: {urlContains: \"/help\"}`",
	Compile: pageStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		tab := n
		if bd.isMap {
			c.AllowKeys(n, "tab", "urlContains")
			bd.b.URLContains = bd.field("urlContains", false)
			tab = n.Get("tab")
			if (tab == nil) == (bd.b.URLContains == "") {
				c.Errf(n, "switchTo needs exactly one of tab, urlContains")
				return
			}
		}
		if tab != nil {
			i, ok := tab.Int()
			if !ok || i < 1 || i > 100 {
				c.Errf(tab, "a tab is a number from 1 (the first) to 100")
				return
			}
			bd.b.Tab = int(i)
		}
	}),
	Title: func(st *duet.Step) string {
		if st.Browser.Tab > 0 {
			return fmt.Sprintf("switchTo tab %d", st.Browser.Tab)
		}
		return "switchTo " + st.Browser.URLContains
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		t, b, err := tabs(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		u, err := renderOpt(env, b.URLContains)
		if err != nil {
			return "", nil, err
		}
		_, err = t.SwitchTab(ctx, b.Tab, u)
		return "", nil, err
	},
})

// CloseTab is the closeTab step.
var CloseTab = register(&Kind{
	Name:    "closeTab",
	Section: Browser,
	Order:   109,
	Summary: "Close the current tab (not the first one) and go back to the tab that opened it.",
	Form:    Form{Null: true},
	Example: "- closeTab:\n",
	Agent:   "`closeTab:`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := browserBody(c, st, n, true)
		if ok && (bd.isMap || bd.isShort) {
			c.Errf(n, "closeTab takes nothing")
		}
		if ok {
			bd.needPage()
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		t, _, err := tabs(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return "", nil, t.CloseTab(ctx)
	},
})
