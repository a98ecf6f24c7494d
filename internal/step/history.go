package step

import (
	"context"

	"github.com/duet-test/duet"
)

// Historian is a Page that goes back and forward in its history and
// reloads. internal/browser's sessions are Historians.
type Historian interface {
	// History goes back, forward or reloads (direction), and waits for
	// the page to load.
	History(ctx context.Context, direction string) error
}

func historyKind(name string, order int, summary, agent string) *Kind {
	return register(&Kind{
		Name:    duet.StepKind(name),
		Section: Browser,
		Order:   order,
		Summary: summary,
		Form:    Form{Null: true},
		Example: "- " + name + ":\n",
		Agent:   agent,
		Compile: func(c *Compiler, st *duet.Step, n *Node) {
			bd, ok := browserBody(c, st, n, true)
			if ok && (bd.isMap || bd.isShort) {
				c.Errf(n, "%s takes nothing", name)
			}
			if ok {
				bd.needPage()
				bd.b.Direction = name
			}
		},
		Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
			h, err := pageAs[Historian](ctx, env, st, "cannot go through its history (its driver lacks Historian)")
			if err != nil {
				return "", nil, err
			}
			return "", nil, h.History(ctx, name)
		},
	})
}

// The history steps.
var (
	Back    = historyKind("back", 101, "Go back to the previous page of the tab's history and wait for it to load.", "`back:` — the previous page of the tab's history")
	Forward = historyKind("forward", 102, "Go forward in the tab's history and wait for the page to load.", "`forward:` — the next page of the history")
	Reload  = historyKind("reload", 103, "Reload the page and wait for it to load.", "`reload:` — load the page again")
)
