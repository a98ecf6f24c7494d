package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Framer is a Page whose element operations can be scoped to an iframe.
// internal/browser's sessions are Framers, for frames of the page's
// process and of other sites alike.
type Framer interface {
	// SetFrame scopes the element operations that follow to the iframe
	// chain names (outermost first); none is the top page.
	SetFrame(ctx context.Context, chain []*duet.Locator) error
}

// Frame is the frame step.
var Frame = register(&Kind{
	Name:    "frame",
	Section: Browser,
	Order:   106,
	Summary: "Make the steps that follow act inside an iframe (found by a locator; a list for nested frames), or back on the top page with `frame: top`.",
	Form: Form{
		Short: &Short{Type: Template, Doc: "a CSS selector of the iframe, or top"},
		Keys:  locatorKeys,
		List:  &Short{Type: Locator, Doc: "the iframes, outermost first"},
	},
	Example: "- frame: \"#payment\"\n- frame: {title: Card details}\n- frame: top\n",
	Doc: "The steps that follow find their elements in the frame's document, until the next `frame`; " +
		"`open`, `switchTo`, `waitForPopup`, `back`, `forward` and `reload` go back to the top page. " +
		"A frame of another site works the same (Chromium runs it in a process of its own). " +
		"A frame inside a frame: `frame: [\"#outer\", \"#inner\"]`. The URL and the title stay the tab's.",
	Agent: "`frame: {title: \"Card details\"}` then the steps inside it, then `frame: top`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		var bd *body
		if n.Type == SeqNode {
			st.Browser = &duet.BrowserStep{}
			bd = &body{c: c, st: st, n: n, b: st.Browser}
		} else {
			var ok bool
			if bd, ok = browserBody(c, st, n, false); !ok {
				return
			}
		}
		bd.needPage()
		switch {
		case bd.isShort && bd.short == "top":
		case n.Type == SeqNode:
			if len(n.Items) == 0 || len(n.Items) > 5 {
				c.Errf(n, "frame: a list of 1 to 5 frames, outermost first")
			}
			for _, it := range n.Items {
				if l := c.compileLocator(it, 1, "frame"); l != nil {
					bd.b.Frame = append(bd.b.Frame, l)
				}
			}
		default:
			if l := c.compileLocator(n, 0, "frame"); l != nil {
				bd.b.Frame = []*duet.Locator{l}
			}
		}
	},
	Title: func(st *duet.Step) string {
		if len(st.Browser.Frame) == 0 {
			return "frame top"
		}
		s := "frame"
		for _, l := range st.Browser.Frame {
			s += " " + l.String()
		}
		return s
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		f, err := pageAs[Framer](ctx, env, st, "cannot act in frames (its driver lacks Framer)")
		if err != nil {
			return "", nil, err
		}
		var chain []*duet.Locator
		for _, l := range st.Browser.Frame {
			r, err := renderLocator(env, l)
			if err != nil {
				return "", nil, err
			}
			chain = append(chain, r)
		}
		return "", nil, f.SetFrame(ctx, chain)
	},
})
