package step

import (
	"context"

	"github.com/duet-test/duet"
)

// StepAIAssert is the name of the aiAssert kind.
const StepAIAssert duet.StepKind = "aiAssert"

// AIAssert is the aiAssert step.
var AIAssert = register(aiKind(&Kind{
	Name:    StepAIAssert,
	Order:   400,
	Summary: "Ask the configured model whether a statement holds on the page, from its accessibility tree; the step fails when it does not.",
	Form:    promptForm("what must hold on the page, in words"),
	Example: "- aiAssert: the order shows two items and a total of 61.50 EUR\n- aiAssert: {prompt: \"order ${orderId} is paid\", maxTokens: 6000}\n",
	Doc: "The model is shown the page as the agent's `inspect_page` shows it (the elements by role and name, " +
		"headings, fields, buttons, links, an excerpt of the text) and answers `{\"pass\", \"reason\"}`; the " +
		"reason is the failure's message. It looks once: to wait until something holds, use `aiWaitFor`. See " +
		"docs/ai-steps.md for the model, the budgets and what is kept.",
	Agent:     "`aiAssert: the cart shows one item that costs 199` (a model judges the page at run time; prefer written assertions)",
	Assertion: true,
	Run: withAI(func(ctx context.Context, env Env, st *duet.Step, a *aiRun, claim string) (string, any, error) {
		page, err := a.look(ctx)
		if err != nil {
			return "", nil, err
		}
		v, err := a.judge(ctx, page, env.Secrets().Scrub(claim))
		if err != nil {
			return "", nil, err
		}
		if !*v.Pass {
			return "", nil, duet.Errorf(duet.CodeAssertionFailed, "aiAssert: %q does not hold: %s", claim, v.Reason)
		}
		return "", map[string]any{"pass": true, "reason": v.Reason}, nil
	}),
}, false, "", nil))
