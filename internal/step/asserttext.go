package step

import (
	"context"
	"fmt"

	"github.com/duet-test/duet"
)

// AssertText is the assertText step.
var AssertText = register(&Kind{
	Name:    duet.StepAssertText,
	Section: Browser,
	Order:   170,
	Summary: "Assert an element's text; retries until it holds.",
	Form: Form{
		Keys:       append(compareKeys[:len(compareKeys):len(compareKeys)], selectorKey),
		ExactlyOne: []string{"equals", "contains", "matches"},
	},
	Example: "- assertText: {selector: \"#status\", equals: paid}\n- assertText: {selector: \"#user\", contains: alice}\n",
	Agent:   "`assertText: {selector: \"#status\", equals | contains | matches: \"...\"}` (exactly one of the three)",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := browserBody(c, st, n, false)
		if !ok {
			return
		}
		bd.needPage()
		if !bd.isMap {
			c.Errf(n, "assertText needs {selector, equals|contains|matches}")
			return
		}
		bd.b.Selector = bd.field("selector", true)
		c.AllowKeys(n, "equals", "contains", "matches", "selector")
		bd.compileCompare()
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, _, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return assertCompare(ctx, env, st, fmt.Sprintf("text of %s", sel), func(ctx context.Context) (string, error) {
			return p.Text(ctx, sel)
		})
	},
})
