package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertTitleForm = Form{
	Short:      &Short{Type: Template, Doc: "a part of the title (as contains)"},
	Keys:       append(compareKeys[:len(compareKeys):len(compareKeys)], notKey),
	ExactlyOne: []string{"equals", "contains", "matches"},
}

// AssertTitle is the assertTitle step.
var AssertTitle = register(&Kind{
	Name:      "assertTitle",
	Section:   Browser,
	Order:     192,
	Summary:   "Assert the page title; retries until it holds.",
	Form:      assertTitleForm,
	Assertion: true,
	Example:   "- assertTitle: Checkout\n- assertTitle: {equals: Checkout — Duet shop, not: true}\n",
	Agent:     "`assertTitle: \"Checkout\"` (contains) or `assertTitle: {equals | contains | matches: \"...\"}`",
	Compile:   compilePageCompare,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, _, _, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return assertCompare(ctx, env, st, "page title", p.Title)
	},
})

// compilePageCompare compiles the assertions of a text of the page (its
// URL, its title): the shorthand (contains), or equals, contains or
// matches, and not.
func compilePageCompare(c *Compiler, st *duet.Step, n *Node) {
	bd, ok := browserBody(c, st, n, false)
	if !ok {
		return
	}
	bd.needPage()
	if !bd.isMap {
		bd.b.Contains = bd.short
		c.Template(n, string(st.Kind), bd.short)
		return
	}
	c.AllowKeys(n, "equals", "contains", "matches", "not")
	bd.compileCompareNot()
}
