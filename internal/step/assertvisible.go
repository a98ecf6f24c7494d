package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertVisibleForm = elementForm("the CSS selector",
	Key{Name: "visible", Type: Bool, Doc: "false asserts the element is hidden or absent (default true)"},
	notKey,
)

// AssertVisible is the assertVisible step.
var AssertVisible = register(&Kind{
	Name:      duet.StepAssertVisible,
	Section:   Browser,
	Order:     180,
	Summary:   "Assert an element is visible (or, with visible: false or not: true, that it is hidden or absent); retries until it holds.",
	Form:      assertVisibleForm,
	Assertion: true,
	Example:   "- assertVisible: \"#welcome\"\n- assertVisible: {selector: \"#error\", visible: false}\n- assertVisible: {role: alert, not: true}\n",
	Agent:     "`assertVisible: {role: heading, name: \"Welcome\"}` or `assertVisible: {selector: \"#error\", not: true}`",
	Compile: elementStep(&assertVisibleForm, func(_ *Compiler, _ *Node, bd *body) {
		bd.b.Visible = bd.bool("visible")
		bd.compileNot()
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		if v := st.Browser.Visible; v != nil && !*v {
			st = inverted(st)
		}
		return expectState(ctx, env, st, "visible", "visible", "hidden")
	},
})
