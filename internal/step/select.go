package step

import "github.com/duet-test/duet"

// Select is the select step.
var Select = register(valueAction("select", "the option's value, or its visible label", &Kind{
	Name:    duet.StepSelect,
	Order:   150,
	Summary: "Choose an option of a `<select>` element, by its value or else its visible label.",
	Example: "- select: {selector: \"#language\", value: zh}\n- select: {label: Size, value: Large}\n",
	Agent:   "`select: {label: \"Size\", value: \"L\"}`",
}))
