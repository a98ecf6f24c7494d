package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertValueForm = Form{
	Keys:       append(append(compareKeys[:len(compareKeys):len(compareKeys)], locatorKeys...), notKey),
	ExactlyOne: []string{"equals", "contains", "matches"},
}

// AssertValue is the assertValue step.
var AssertValue = register(&Kind{
	Name:      "assertValue",
	Section:   Browser,
	Order:     172,
	Summary:   "Assert the value of a field (an input, a textarea, a select's chosen value); retries until it holds.",
	Form:      assertValueForm,
	Assertion: true,
	Example:   "- assertValue: {label: Quantity, equals: \"2\"}\n",
	Agent:     "`assertValue: {label: \"Quantity\", equals: \"2\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		if bd, ok := compileElement(c, st, n, &assertValueForm); ok {
			bd.compileCompareNot()
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return expectCompare(ctx, env, st, func(t Target) string { return "value of " + t.String() }, Query{Kind: "value"})
	},
})
