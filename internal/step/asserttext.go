package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertTextForm = Form{
	Keys:       append(append(compareKeys[:len(compareKeys):len(compareKeys)], locatorKeys...), notKey),
	ExactlyOne: []string{"equals", "contains", "matches"},
}

// AssertText is the assertText step.
var AssertText = register(&Kind{
	Name:      duet.StepAssertText,
	Section:   Browser,
	Order:     170,
	Summary:   "Assert an element's text (as shown; empty when it is hidden); retries until it holds.",
	Form:      assertTextForm,
	Assertion: true,
	Example:   "- assertText: {selector: \"#status\", equals: paid}\n- assertText: {selector: \"#user\", contains: alice}\n- assertText: {role: status, matches: \"^Paid\", not: false}\n",
	Agent:     "`assertText: {role: status, equals | contains | matches: \"...\"}` (exactly one of the three; `not: true` for the opposite)",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := compileElement(c, st, n, &assertTextForm)
		if !ok {
			return
		}
		bd.compileCompareNot()
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return expectCompare(ctx, env, st, func(t Target) string { return "text of " + t.String() }, Query{Kind: "text"})
	},
})
