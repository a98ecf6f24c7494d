package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Screenshot is the screenshot step.
var Screenshot = register(&Kind{
	Name:    duet.StepScreenshot,
	Section: Browser,
	Order:   210,
	Summary: "Save a screenshot of the page as an artifact of the run.",
	Form: Form{
		Short: &Short{Type: Text, Doc: "the screenshot's name"},
		Keys: []Key{
			{Name: "fullPage", Type: Bool, Doc: "the whole page, not only the viewport"},
			{Name: "name", Type: Text, Doc: "the screenshot's name (the step's name)"},
		},
		Null: true,
	},
	Example: "- screenshot: after login\n- screenshot: {name: order page, fullPage: true}\n",
	Agent:   "`screenshot: after-checkout` or `screenshot: {fullPage: true}`",
	Compile: pageStep(true, func(c *Compiler, st *duet.Step, n *Node, bd *body) {
		if bd.isMap {
			c.AllowKeys(n, "fullPage", "name")
			if fp := bd.bool("fullPage"); fp != nil {
				bd.b.FullPage = *fp
			}
			if nm := c.String(n, "name", false); nm != "" && st.Name == "" {
				st.Name = nm
			}
		} else if bd.isShort && st.Name == "" {
			st.Name = bd.short
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, _, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		png, err := p.Screenshot(ctx, b.FullPage)
		if err != nil {
			return "", nil, err
		}
		id, err := env.SaveArtifact(ctx, st, st.Name, png)
		if err != nil || id == "" {
			return "", nil, err
		}
		return "", map[string]any{"artifact": id, "bytes": float64(len(png))}, nil
	},
})
