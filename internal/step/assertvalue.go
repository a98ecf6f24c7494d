package step

var assertValueForm = compareForm()

// AssertValue is the assertValue step.
var AssertValue = register(compareAssertion("value", &assertValueForm, "", nil, func(string) string { return "value" }, &Kind{
	Name:    "assertValue",
	Order:   172,
	Summary: "Assert the value of a field (an input, a textarea, a select's chosen value); retries until it holds.",
	Example: "- assertValue: {label: Quantity, equals: \"2\"}\n",
	Agent:   "`assertValue: {label: \"Quantity\", equals: \"2\"}`",
}))
