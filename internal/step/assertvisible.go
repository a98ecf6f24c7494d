package step

import (
	"context"

	"github.com/duet-test/duet"
)

// AssertVisible is the assertVisible step.
var AssertVisible = register(&Kind{
	Name:    duet.StepAssertVisible,
	Section: Browser,
	Order:   180,
	Summary: "Assert an element is visible (or, with visible: false, that none is); retries until it holds.",
	Form: Form{
		Short: &Short{Type: Template, Doc: "the CSS selector"},
		Keys: []Key{
			selectorKey,
			{Name: "visible", Type: Bool, Doc: "false asserts the element is hidden or absent (default true)"},
		},
	},
	Example: "- assertVisible: \"#welcome\"\n- assertVisible: {selector: \"#error\", visible: false}\n",
	Agent:   "`assertVisible: \"#banner\"` or `assertVisible: {selector: \"#error\", visible: false}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := compileSelector(c, st, n, []string{"selector", "visible"})
		if ok && bd.isMap {
			bd.b.Visible = bd.bool("visible")
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		if b.Visible == nil || *b.Visible {
			actx, cancel := assertContext(ctx, st)
			defer cancel()
			if err := p.WaitFor(actx, WaitCondition{Selector: sel, Visible: true}); err != nil {
				if c := duet.ErrorCode(err); c == duet.CodeStepTimeout || c == duet.CodeElementNotFound {
					return "", nil, duet.Errorf(duet.CodeAssertionFailed, "%s is not visible (%s)", sel, duet.ErrorMessage(err))
				}
				return "", nil, err
			}
			return "", true, nil
		}
		err = retry(ctx, st, func(ctx context.Context) error {
			vis, err := p.Visible(ctx, sel)
			if err != nil {
				return err
			}
			if vis {
				return duet.Errorf(duet.CodeAssertionFailed, "%s is visible; expected it hidden", sel)
			}
			return nil
		})
		if err != nil {
			return "", nil, err
		}
		return "", false, nil
	},
})
