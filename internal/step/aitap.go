package step

import (
	"context"

	"github.com/duet-test/duet"
)

// StepAITap is the name of the aiTap kind.
const StepAITap duet.StepKind = "aiTap"

// AITap is the aiTap step.
var AITap = register(aiKind(&Kind{
	Name:    StepAITap,
	Order:   415,
	Summary: "Click the element a description names: the configured model finds it in the page's accessibility tree, the click is a written click on its most robust locator, and the next run replays it from the shared cache without a model.",
	Form:    promptForm("the element to click, in words"),
	Example: "- aiTap: the Add to cart button of the wireless headphones\n- aiTap: {prompt: \"the link to order ${orderId}\", maxTokens: 6000}\n",
	Doc: "The model answers with the reference of one listed element; the step resolves it to a locator (role and " +
		"name first, then text, test id, CSS last), clicks it as `click` does (waiting until it is visible, stable, " +
		"enabled and not covered) and keeps the locator in the shared cache. See docs/ai-steps.md for the cache, " +
		"healing and the budgets.",
	Agent: "`aiTap: the Add to cart button of the headphones` (a model finds the element once; prefer click with a locator)",
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return actOnOne(ctx, env, st, "", "The element to click:", "click")
	},
}, true, "", nil))
