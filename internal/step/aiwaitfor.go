package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// StepAIWaitFor is the name of the aiWaitFor kind.
const StepAIWaitFor duet.StepKind = "aiWaitFor"

// aiWaitInterval is how long aiWaitFor waits between looks by default.
const aiWaitInterval = time.Second

// AIWaitFor is the aiWaitFor step.
var AIWaitFor = register(aiKind(&Kind{
	Name:    StepAIWaitFor,
	Order:   410,
	Summary: "Look at the page until the configured model says a statement holds, within the step's timeout and token budget.",
	Form: promptForm("what the page must come to show, in words",
		Key{Name: "interval", Type: Duration, Doc: "the pause between looks (default 1s)"}),
	Example: "- aiWaitFor: the report is ready to open\n- aiWaitFor: {prompt: the order is confirmed, interval: 2s, maxTokens: 12000}\n  timeout: 20s\n",
	Doc: "Each look reads the page's accessibility tree; the model is asked again only when the page changed " +
		"since it last answered, so a page that stays the same costs one call. The step fails with " +
		"STEP_TIMEOUT (and the model's last reason) when its timeout passes, and with LLM_BUDGET_EXCEEDED when " +
		"the next call would pass its token budget.",
	Agent: "`aiWaitFor: the order is confirmed` (a model looks at the page until it holds; prefer waitFor)",
	Run: withAI(func(ctx context.Context, env Env, st *duet.Step, a *aiRun, claim string) (string, any, error) {
		claim = env.Secrets().Scrub(claim)
		interval := aiWaitInterval
		if st.AI.IntervalMs > 0 {
			interval = time.Duration(st.AI.IntervalMs) * time.Millisecond
		}
		var last, reason string
		looks := 0
		for {
			page, err := a.look(ctx)
			if err != nil {
				return "", nil, waitEnded(ctx, err, claim, looks, a, reason)
			}
			looks++
			if page != last { // an unchanged page gets the same answer
				v, err := a.judge(ctx, page, claim)
				if err != nil {
					return "", nil, waitEnded(ctx, err, claim, looks, a, reason)
				}
				if *v.Pass {
					return "", map[string]any{"pass": true, "reason": v.Reason, "looks": float64(looks)}, nil
				}
				last, reason = page, v.Reason
			}
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return "", nil, waitEnded(ctx, ctx.Err(), claim, looks, a, reason)
			case <-t.C:
			}
		}
	}),
}, false, "", func(c *Compiler, n *Node, ai *duet.AIStep) {
	if v := n.Get("interval"); v != nil {
		ai.IntervalMs = c.Timeout(v, MaxStepTimeout)
	}
}))

// waitEnded is the error of an aiWaitFor that stopped on err: when the
// step's time ran out, STEP_TIMEOUT with the model's last reason.
func waitEnded(ctx context.Context, err error, claim string, looks int, a *aiRun, reason string) error {
	if ctx.Err() == nil && !pastDeadline(ctx) {
		return err
	}
	if reason == "" {
		reason = "the model had not answered yet"
	}
	return duet.Errorf(duet.CodeStepTimeout, "aiWaitFor: %q did not come to hold after %d looks and %d model calls: %s", claim, looks, a.usage.Calls, reason)
}
