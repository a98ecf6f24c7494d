package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertCSSForm = Form{
	Keys: append(append([]Key{{Name: "property", Type: Template, Required: true, Doc: "the CSS property (color, display, ...), as computed"}},
		append(compareKeys[:len(compareKeys):len(compareKeys)], locatorKeys...)...), notKey),
	ExactlyOne: []string{"equals", "contains", "matches"},
}

// AssertCSS is the assertCSS step.
var AssertCSS = register(&Kind{
	Name:      "assertCSS",
	Section:   Browser,
	Order:     188,
	Summary:   "Assert a computed CSS property of an element (colours read as rgb(...)); retries until it holds.",
	Form:      assertCSSForm,
	Assertion: true,
	Example:   "- assertCSS: {text: Sale, property: color, equals: \"rgb(200, 0, 0)\"}\n",
	Agent:     "`assertCSS: {text: \"Sale\", property: color, equals: \"rgb(200, 0, 0)\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := compileElement(c, st, n, &assertCSSForm)
		if !ok {
			return
		}
		bd.b.Property = bd.field("property", true)
		bd.compileCompareNot()
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		prop, err := render(env, st.Browser.Property)
		if err != nil {
			return "", nil, err
		}
		return expectCompare(ctx, env, st, func(t Target) string { return prop + " of " + t.String() }, Query{Kind: "css", Name: prop})
	},
})
