package step

// Blur is the blur step.
var Blur = register(elementAction("blur", &Kind{
	Name:    "blur",
	Order:   143,
	Summary: "Take the keyboard focus away from an element (what a form checks a field on).",
	Example: "- blur: {label: Email address}\n",
	Agent:   "`blur: {label: \"Email\"}` — what a form checks a field on",
}))
