package step

import (
	"context"

	"github.com/duet-test/duet"
)

// StepAIFill is the name of the aiFill kind.
const StepAIFill duet.StepKind = "aiFill"

var aiFillForm = Form{
	Keys: []Key{
		{Name: "prompt", Type: Template, Required: true, Doc: "the field to fill, in words"},
		{Name: "value", Type: Template, Required: true, Doc: "what to type into it (rendered at run time; never shown to the model)"},
		aiBudgetKey,
	},
}

// AIFill is the aiFill step.
var AIFill = register(aiKind(&Kind{
	Name:    StepAIFill,
	Order:   420,
	Summary: "Fill the field a description names with a value: the configured model finds the field, the fill is a written fill on its most robust locator, and the next run replays it from the shared cache without a model.",
	Form:    aiFillForm,
	Example: "- aiFill: {prompt: the e-mail address of the delivery, value: \"buyer-${orderId}@example.com\"}\n",
	Doc: "The model is shown the page and the description, never the value: it answers with the reference of " +
		"one listed field, which the step resolves to a locator and fills as `fill` does. The value is the step's, " +
		"rendered at each run (a secret stays out of the model's prompt and out of the cache).",
	Agent: "`aiFill: {prompt: the e-mail field, value: \"${email}\"}` (a model finds the field once; prefer fill with a locator)",
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		if st.AI == nil {
			return "", nil, noBody(st)
		}
		value, err := render(env, st.AI.Value)
		if err != nil {
			return "", nil, err
		}
		return actOnOne(ctx, env, st, value, "The field to fill (its value is typed by the test, not by you):", "fill")
	},
}, true, "prompt, value", func(c *Compiler, n *Node, ai *duet.AIStep) {
	ai.Value = c.String(n, "value", true)
	if v := n.Get("value"); v != nil {
		c.Template(v, "value", ai.Value)
	}
}))
