package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

var typeForm = elementForm("",
	Key{Name: "value", Type: Template, Required: true, Doc: "the text to type, key by key, after what the field holds"},
	Key{Name: "delay", Type: Duration, Doc: "the pause after each key, at most 1s (default none)"},
)

// maxTypeDelay bounds type's delay.
const maxTypeDelay = time.Second

// TypeKind is the type step.
var TypeKind = register(&Kind{
	Name:    "type",
	Section: Browser,
	Order:   132,
	Summary: "Type a text key by key into an element (without clearing it), with an optional pause between keys: a search box that suggests as you type.",
	Form:    typeForm,
	Example: "- type: {placeholder: Search, value: mug, delay: 50ms}\n",
	Agent:   "`type: {placeholder: \"Search\", value: \"mug\", delay: 50ms}` — key by key, keeps what the field holds (fill replaces it)",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		compileValue(&typeForm)(c, st, n)
		if dn := n.Get("delay"); dn != nil && st.Browser != nil {
			st.Browser.DelayMs = c.Timeout(dn, maxTypeDelay)
		}
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		v, err := renderOpt(env, st.Browser.Value)
		if err != nil {
			return "", nil, err
		}
		return act(ctx, env, st, Action{Kind: "type", Value: v, Delay: time.Duration(st.Browser.DelayMs) * time.Millisecond})
	},
})
