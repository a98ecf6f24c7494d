package step

import "github.com/duet-test/duet"

// Fill is the fill step.
var Fill = register(valueAction("fill", "the text the field holds afterwards", &Kind{
	Name:    duet.StepFill,
	Order:   130,
	Summary: "Fill a field: wait until it is visible, enabled and editable, clear it and put the value in as one edit (one input event, as a paste; `type` goes key by key).",
	Example: "- fill: {selector: \"#username\", value: alice}\n- fill: {label: Email address, value: alice@example.com}\n",
	Agent:   "`fill: {label: \"Email\", value: \"a@example.com\"}` (or `placeholder:`, `selector:`)",
}))

// compileValue returns the compile function of the kinds whose body is an
// element and a value (fill, select, type); f has no shorthand.
func compileValue(f *Form) func(c *Compiler, st *duet.Step, n *Node) {
	return elementStep(f, func(c *Compiler, n *Node, bd *body) {
		if vn := n.Get("value"); vn == nil {
			c.Errf(n, "missing key value")
		} else if s, ok := vn.Str(); ok {
			bd.b.Value = s
			c.Template(vn, "value", s)
		} else {
			c.Errf(vn, "value must be a string")
		}
	})
}
