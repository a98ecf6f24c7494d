package step

// AssertChecked is the assertChecked step.
var AssertChecked = register(stateAssertion("checked", "checked", "unchecked", false, &Kind{
	Name:    "assertChecked",
	Order:   184,
	Summary: "Assert a checkbox, a radio button or an element with aria-checked is checked (or, with not, that it is not); retries until it holds.",
	Example: "- assertChecked: {label: I agree to the terms}\n",
	Agent:   "`assertChecked: {label: \"I agree\"}` (`not: true`: unchecked)",
}))
