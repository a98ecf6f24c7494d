package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Open is the open step: navigate the page.
var Open = register(&Kind{
	Name:    duet.StepOpen,
	Section: Browser,
	Order:   100,
	Summary: "Navigate the page to a URL and wait for it to load.",
	Form:    shortFor("url", Template, "the URL", `"/..." is relative to the task's baseURL; or an absolute http(s) URL`),
	Example: "- open: /order?orderId=A1001\n- open: {url: \"https://shop.example/\"}\n",
	Doc:     "Every other browser step needs an `open` before it. The first browser step of a case starts its browser session: one isolated browser context per case execution.",
	Agent:   "`open: /order?orderId=A1001` — navigate.",
	Compile: browserStep(false, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if bd.isMap {
			c.AllowKeys(n, "url")
		}
		b := bd.b
		b.URL = bd.text("url", true)
		if b.URL != "" {
			c.RelativeURL(n, "open", b.URL)
		}
		c.Scope.PageOpen = true
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, _, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		u, err := renderOpt(env, b.URL)
		if err != nil {
			return "", nil, err
		}
		if u, err = ResolveURL(env.Task(), u); err != nil {
			return "", nil, err
		}
		return "", nil, p.Open(ctx, u)
	},
})
