package step

import (
	"context"

	"github.com/duet-test/duet"
)

var assertTitleForm = pageCompareForm("a part of the title (as contains)")

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
	Compile:   pageStep(false, compilePageCompare),
	Run:       pageCompare("page title", Page.Title),
})

// pageCompareForm is the form of an assertion of a text of the page (its
// URL, its title, a dialog's message): the shorthand (as contains), or
// equals, contains or matches (exactly one), keys of its own, and not.
func pageCompareForm(shortDoc string, keys ...Key) Form {
	return Form{
		Short:      &Short{Type: Template, Doc: shortDoc},
		Keys:       append(append(compareKeys[:len(compareKeys):len(compareKeys)], keys...), notKey),
		ExactlyOne: []string{"equals", "contains", "matches"},
	}
}

// pageCompare is the run function of an assertion of a text of the page
// that read reads (its title, its URL), named what in messages.
func pageCompare(what string, read func(Page, context.Context) (string, error)) func(context.Context, Env, *duet.Step) (string, any, error) {
	return func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, _, _, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return assertCompare(ctx, env, st, what, func(ctx context.Context) (string, error) { return read(p, ctx) })
	}
}

// compilePageCompare compiles the assertions of a text of the page (its
// URL, its title): the shorthand (contains), or equals, contains or
// matches, and not.
func compilePageCompare(c *Compiler, st *duet.Step, n *Node, bd *body) {
	if !bd.isMap {
		bd.b.Contains = bd.short
		c.Template(n, string(st.Kind), bd.short)
		return
	}
	c.AllowKeys(n, "equals", "contains", "matches", "not")
	bd.compileCompareNot()
}
