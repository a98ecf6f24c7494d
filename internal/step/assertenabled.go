package step

// AssertEnabled is the assertEnabled step.
var AssertEnabled = register(stateAssertion("enabled", "enabled", "disabled", false, &Kind{
	Name:    "assertEnabled",
	Order:   182,
	Summary: "Assert an element is enabled (not disabled, nor aria-disabled); retries until it holds.",
	Example: "- assertEnabled: {role: button, name: Pay}\n",
	Agent:   "`assertEnabled: {role: button, name: \"Pay\"}`",
}))
