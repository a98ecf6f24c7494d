package step

import (
	"context"

	"github.com/duet-test/duet"
)

var ifForm = Form{
	Keys: append(conditionKeys[:len(conditionKeys):len(conditionKeys)],
		Key{Name: "then", Type: Steps, Required: true, Doc: "the steps run when the condition holds"},
		Key{Name: "else", Type: Steps, Doc: "the steps run when it does not"},
	),
	ExactlyOne: []string{"expr", "visible", "hidden"},
}

// If is the if step.
var If = register(&Kind{
	Name:    duet.StepIf,
	Section: Flow,
	Order:   300,
	Summary: "Run one list of steps when a condition holds (an expression, or whether an element is visible now), and another, if given, when it does not.",
	Form:    ifForm,
	Example: "- if:\n" +
		"    visible: \"#cookie-banner\"\n" +
		"    then:\n" +
		"      - click: \"#cookie-banner .accept\"\n" +
		"- if:\n" +
		"    expr: resp.body.items == 0\n" +
		"    then:\n" +
		"      - open: /shop\n" +
		"    else:\n" +
		"      - click: \"#checkout\"\n",
	Doc: "`visible` and `hidden` look at the page as it is when the step runs, without waiting: put a `waitFor` " +
		"before the `if` when the element may come late. The result says which branch ran (`then`, `else`, or " +
		"`none` when the condition was false and there is no `else`).",
	Agent: "`if: {visible: \"#cookie-banner\", then: [...], else: [...]}` — or `expr: EXPRESSION` / `hidden: SELECTOR` " +
		"instead of visible; runs then or else (the page is looked at as it is, not waited for).",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if !c.mapping(n, "if must be a mapping: a condition (expr, visible or hidden), then and else", ifForm.KeyNames()...) {
			return
		}
		s := &duet.IfStep{Condition: c.condition(n, "if")}
		st.If = s
		s.Then = c.body(n, "then", "if", true)
		s.Else = c.body(n, "else", "if", false)
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		s := st.If
		if s == nil {
			return "", nil, noBody(st)
		}
		ok, err := holds(ctx, env, &s.Condition)
		if err != nil {
			return "", nil, err
		}
		steps, branch := s.Then, "then"
		if !ok {
			steps, branch = s.Else, "else"
			if len(steps) == 0 {
				branch = "none"
			}
		}
		env.FlowState(branch, 0)
		return "", nil, env.RunSteps(ctx, steps, 0)
	},
	Title: func(st *duet.Step) string {
		if st.If == nil {
			return string(st.Kind)
		}
		return "if " + describeCondition(&st.If.Condition)
	},
})
