package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// maxWait bounds a wait step.
const maxWait = time.Minute

// Wait is the wait step.
var Wait = register(&Kind{
	Name:    "wait",
	Section: Data,
	Order:   50,
	Summary: "Pause for a fixed time. Every step already waits for what it needs: prefer waitFor or an assertion (duet lint warns on this step).",
	Form:    Form{Short: &Short{Type: Duration, Doc: "how long, at most 1m"}},
	Example: "- wait: 500ms\n",
	Agent:   "`wait: 500ms` — avoid: steps wait for their elements, assertions retry",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		st.Browser = &duet.BrowserStep{}
		if n.Type != ScalarNode {
			c.Errf(n, "wait takes a duration such as 500ms")
			return
		}
		st.Browser.DelayMs = c.Timeout(n, maxWait)
	},
	Title: func(st *duet.Step) string {
		return "wait " + (time.Duration(st.Browser.DelayMs) * time.Millisecond).String()
	},
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		t := time.NewTimer(time.Duration(st.Browser.DelayMs) * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return "", nil, ctx.Err()
		case <-t.C:
			return "", nil, nil
		}
	},
})
