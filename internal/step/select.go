package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Select is the select step.
var Select = register(&Kind{
	Name:    duet.StepSelect,
	Section: Browser,
	Order:   150,
	Summary: "Choose an option of a `<select>` element, by its value or else its visible label.",
	Form: Form{Keys: []Key{
		{Name: "selector", Type: Template, Required: true, Doc: "CSS selector of the `<select>`"},
		{Name: "value", Type: Template, Required: true, Doc: "the option's value, or its visible label"},
	}},
	Example: "- select: {selector: \"#language\", value: zh}\n",
	Agent:   "`select: {selector: \"#size\", value: \"L\"}`",
	Compile: compileValue,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, b, sel, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		v, err := renderOpt(env, b.Value)
		if err != nil {
			return "", nil, err
		}
		return "", nil, p.Select(ctx, sel, v)
	},
})
