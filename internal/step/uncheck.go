package step

// Uncheck is the uncheck step.
var Uncheck = register(elementAction("uncheck", &Kind{
	Name:    "uncheck",
	Order:   115,
	Summary: "Uncheck a checkbox (or an element with aria-checked): click it if it is checked, then make sure it is not.",
	Example: "- uncheck: {role: checkbox, name: Send me the newsletter}\n",
	Agent:   "`uncheck: {role: checkbox, name: \"Newsletter\"}`",
}))
