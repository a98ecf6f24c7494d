package step

// AssertDisabled is the assertDisabled step: assertEnabled inverted.
var AssertDisabled = register(stateAssertion("enabled", "enabled", "disabled", true, &Kind{
	Name:    "assertDisabled",
	Order:   183,
	Summary: "Assert an element is disabled (disabled, or aria-disabled); retries until it holds.",
	Example: "- assertDisabled: {role: button, name: Pay}\n",
	Agent:   "`assertDisabled: {role: button, name: \"Pay\"}`",
}))
