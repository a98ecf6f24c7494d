package step

import "github.com/duet-test/duet"

// AssertURL is the assertURL step.
var AssertURL = register(&Kind{
	Name:      duet.StepAssertURL,
	Section:   Browser,
	Order:     190,
	Summary:   "Assert the page URL; retries until it holds.",
	Form:      pageCompareForm("a part of the URL (as contains)"),
	Assertion: true,
	Example:   "- assertURL: welcome=alice\n- assertURL: {matches: \"[?&]welcome=alice$\"}\n",
	Agent:     "`assertURL: \"/order\"` (contains) or `assertURL: {equals | contains | matches: \"...\"}`",
	Compile:   pageStep(false, compilePageCompare),
	Run:       pageCompare("page URL", Page.URL),
})
