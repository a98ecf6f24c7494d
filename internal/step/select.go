package step

import (
	"context"

	"github.com/duet-test/duet"
)

var selectForm = elementForm("", Key{Name: "value", Type: Template, Required: true, Doc: "the option's value, or its visible label"})

// Select is the select step.
var Select = register(&Kind{
	Name:    duet.StepSelect,
	Section: Browser,
	Order:   150,
	Summary: "Choose an option of a `<select>` element, by its value or else its visible label.",
	Form:    selectForm,
	Example: "- select: {selector: \"#language\", value: zh}\n- select: {label: Size, value: Large}\n",
	Agent:   "`select: {label: \"Size\", value: \"L\"}`",
	Compile: compileValue(&selectForm),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		v, err := renderOpt(env, st.Browser.Value)
		if err != nil {
			return "", nil, err
		}
		return act(ctx, env, st, Action{Kind: "select", Value: v})
	},
})
