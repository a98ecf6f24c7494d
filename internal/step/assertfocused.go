package step

// AssertFocused is the assertFocused step.
var AssertFocused = register(stateAssertion("focused", "focused", "not focused", false, &Kind{
	Name:    "assertFocused",
	Order:   186,
	Summary: "Assert an element has the keyboard focus; retries until it holds.",
	Example: "- assertFocused: {label: Email address}\n",
	Agent:   "`assertFocused: {label: \"Email\"}`",
}))
