package step

// Clear is the clear step.
var Clear = register(elementAction("clear", &Kind{
	Name:    "clear",
	Order:   134,
	Summary: "Empty a field (an input, a textarea, a contenteditable element), once it is editable.",
	Example: "- clear: {label: Email address}\n",
	Agent:   "`clear: {label: \"Email\"}`",
}))
