package step

// Check is the check step.
var Check = register(elementAction("check", &Kind{
	Name:    "check",
	Order:   114,
	Summary: "Check a checkbox or a radio button (or an element with aria-checked): click it unless it is checked, then make sure it is.",
	Example: "- check: {label: I agree to the terms}\n",
	Agent:   "`check: {label: \"I agree\"}` — checks it unless it is checked",
}))
