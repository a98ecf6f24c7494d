package step

// Focus is the focus step.
var Focus = register(elementAction("focus", &Kind{
	Name:    "focus",
	Order:   142,
	Summary: "Give an element the keyboard focus, once it is visible.",
	Example: "- focus: {label: Email address}\n",
	Agent:   "`focus: {label: \"Email\"}`",
}))
