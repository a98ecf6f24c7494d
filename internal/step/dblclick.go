package step

import (
	"context"

	"github.com/duet-test/duet"
)

var dblclickForm = elementForm("the CSS selector",
	Key{Name: "modifiers", Type: keyList, Doc: "keys held during the clicks: Shift, Control, Alt, Meta"},
)

// DblClick is the dblclick step.
var DblClick = register(&Kind{
	Name:    "dblclick",
	Section: Browser,
	Order:   112,
	Summary: "Double-click an element, once it can be clicked (as click waits for it).",
	Form:    dblclickForm,
	Example: "- dblclick: {text: Blue mug, exact: true}\n",
	Agent:   "`dblclick: {text: \"Blue mug\"}`",
	Compile: elementStep(&dblclickForm, func(_ *Compiler, n *Node, bd *body) {
		if mn := n.Get("modifiers"); mn != nil {
			bd.b.Modifiers = bd.modifiers(mn)
		}
	}),
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		return act(ctx, env, st, Action{Kind: "dblclick", Modifiers: st.Browser.Modifiers})
	},
})
