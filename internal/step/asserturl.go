package step

import (
	"context"

	"github.com/duet-test/duet"
)

// AssertURL is the assertURL step.
var AssertURL = register(&Kind{
	Name:    duet.StepAssertURL,
	Section: Browser,
	Order:   190,
	Summary: "Assert the page URL; retries until it holds.",
	Form: Form{
		Short:      &Short{Type: Template, Doc: "a part of the URL (as contains)"},
		Keys:       append(compareKeys[:len(compareKeys):len(compareKeys)], notKey),
		ExactlyOne: []string{"equals", "contains", "matches"},
	},
	Assertion: true,
	Example:   "- assertURL: welcome=alice\n- assertURL: {matches: \"[?&]welcome=alice$\"}\n",
	Agent:     "`assertURL: \"/order\"` (contains) or `assertURL: {equals | contains | matches: \"...\"}`",
	Compile:   compilePageCompare,
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		p, _, _, err := page(ctx, env, st)
		if err != nil {
			return "", nil, err
		}
		return assertCompare(ctx, env, st, "page URL", p.URL)
	},
})
