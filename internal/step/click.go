package step

import (
	"context"

	"github.com/duet-test/duet"
)

var clickForm = elementForm("the CSS selector",
	Key{Name: "button", Type: Enum("left", "right", "middle"), Doc: "the mouse button (default left; right opens a context menu)"},
	Key{Name: "modifiers", Type: keyList, Doc: "keys held during the click: Shift, Control, Alt, Meta"},
)

// Click is the click step.
var Click = register(&Kind{
	Name:    duet.StepClick,
	Section: Browser,
	Order:   110,
	Summary: "Click an element: wait until it is visible, stable, enabled and not covered, then click its centre with the mouse.",
	Form:    clickForm,
	Example: "- click: \"#buy\"\n- click: {role: button, name: Add to cart, within: {role: region, name: Blue mug}}\n- click: {text: Blue mug, button: right}\n",
	Agent:   "`click: {role: button, name: \"Sign in\"}` (or `click: \"#buy\"`; `button: right`, `modifiers: [Shift]`)",
	Compile: elementStep(&clickForm, func(_ *Compiler, _ *Node, bd *body) { bd.compileMouse() }),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "click", Button: st.Browser.Button, Modifiers: st.Browser.Modifiers})
	},
})

// compileMouse reads button and modifiers.
func (bd *body) compileMouse() {
	c, n, b := bd.c, bd.n, bd.b
	b.Button = c.String(n, "button", false)
	switch b.Button {
	case "", "left", "right", "middle":
	default:
		c.Errf(n.Get("button"), "button must be left, right or middle, got %q", b.Button)
	}
	if mn := n.Get("modifiers"); mn != nil {
		b.Modifiers = bd.modifiers(mn)
	}
}

// modifiers reads a list of modifier keys.
func (bd *body) modifiers(mn *Node) []string {
	if mn.Type != SeqNode {
		bd.c.Errf(mn, "modifiers must be a list: [Shift, Control, Alt, Meta]")
		return nil
	}
	var out []string
	for _, it := range mn.Items {
		s, _ := it.Str()
		switch s {
		case "Shift", "Control", "Alt", "Meta":
			out = append(out, s)
		default:
			bd.c.Errf(it, "a modifier is Shift, Control, Alt or Meta, got %q", s)
		}
	}
	return out
}
