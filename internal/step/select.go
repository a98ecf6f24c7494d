package step

import "github.com/duet-test/duet"

var selectForm = elementForm("", Key{Name: "value", Type: Template, Required: true, Doc: "the option's value, or its visible label"})

// Select is the select step.
var Select = register(valueAction("select", &selectForm, &Kind{
	Name:    duet.StepSelect,
	Order:   150,
	Summary: "Choose an option of a `<select>` element, by its value or else its visible label.",
	Example: "- select: {selector: \"#language\", value: zh}\n- select: {label: Size, value: Large}\n",
	Agent:   "`select: {label: \"Size\", value: \"L\"}`",
}))
