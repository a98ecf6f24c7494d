package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertAttributeForm = Form{
	Keys: append(append([]Key{{Name: "attr", Type: Template, Required: true, Doc: "the attribute's name"}},
		append(compareKeys[:len(compareKeys):len(compareKeys)], locatorKeys...)...), notKey),
	ExactlyOne: []string{"equals", "contains", "matches"},
}

// AssertAttribute is the assertAttribute step.
var AssertAttribute = register(&Kind{
	Name:      "assertAttribute",
	Section:   Browser,
	Order:     174,
	Summary:   "Assert an attribute of an element (aria-expanded, href, class...); retries until it holds. An element without the attribute fails it (and passes with not).",
	Form:      assertAttributeForm,
	Assertion: true,
	Example:   "- assertAttribute: {role: button, name: Menu, attr: aria-expanded, equals: \"true\"}\n",
	Agent:     "`assertAttribute: {role: link, name: \"Help\", attr: href, contains: \"/help\"}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		bd, ok := compileElement(c, st, n, &assertAttributeForm)
		if !ok {
			return
		}
		bd.b.Attr = bd.field("attr", true)
		bd.compileCompareNot()
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		name, err := render(env, st.Browser.Attr)
		if err != nil {
			return "", nil, err
		}
		return expectCompare(ctx, env, st, func(t Target) string { return "attribute " + name + " of " + t.String() }, Query{Kind: "attr", Name: name})
	},
})
