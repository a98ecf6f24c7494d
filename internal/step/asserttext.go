package step

import "github.com/duet-test/duet"

var assertTextForm = compareForm()

// AssertText is the assertText step.
var AssertText = register(compareAssertion("text", &assertTextForm, "", nil, func(string) string { return "text" }, &Kind{
	Name:    duet.StepAssertText,
	Order:   170,
	Summary: "Assert an element's text (as shown; empty when it is hidden); retries until it holds.",
	Example: "- assertText: {selector: \"#status\", equals: paid}\n- assertText: {selector: \"#user\", contains: alice}\n- assertText: {role: status, matches: \"^Paid\", not: false}\n",
	Agent:   "`assertText: {role: status, equals | contains | matches: \"...\"}` (exactly one of the three; `not: true` for the opposite)",
}))
