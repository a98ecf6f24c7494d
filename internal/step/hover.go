package step

// Hover is the hover step.
var Hover = register(elementAction("hover", &Kind{
	Name:    "hover",
	Order:   120,
	Summary: "Move the mouse over an element: wait until it is visible, stable and not covered, then hover its centre (menus and tooltips that open on hover).",
	Example: "- hover: \"#account-menu\"\n- hover: {role: button, name: Account}\n",
	Agent:   "`hover: {role: button, name: Account}` — move the mouse over an element (menus that open on hover).",
}))
