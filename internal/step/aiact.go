package step

import (
	"context"
	"fmt"
	"strings"

	"github.com/duet-test/duet"
)

// StepAI is the name of the ai kind.
const StepAI duet.StepKind = "ai"

// DefaultAIRounds bounds the look-and-act rounds of an ai step without
// maxRounds.
const DefaultAIRounds = 8

// aiMaxMoves bounds the actions of one round.
const aiMaxMoves = 5

var aiActForm = shortFor("prompt", Template, "the goal, in words", "the goal, in words: what to do and what must hold after",
	Key{Name: "maxRounds", Type: Int, Doc: "the most look-and-act rounds (default 8)"},
	aiBudgetKey,
)

// aiMove is the answer of one round of an ai step.
type aiMove struct {
	Done    *bool          `json:"done"`
	Reason  string         `json:"reason"`
	Actions []aiMoveAction `json:"actions"`
}

type aiMoveAction struct {
	Do    string `json:"do"`
	Ref   string `json:"ref"`
	Value string `json:"value"`
}

const aiMoveFormat = `{"done": true or false, "reason": "one sentence", "actions": [{"do": "click | fill | select | check | uncheck | press | hover", "ref": "e3", "value": "for fill the text, for select the option, for press the key; else omit"}]}
done is true, with no actions, only when the page as shown proves the goal holds. Otherwise give the next actions to take on the listed elements, in order, at most 5; you will be shown the page again after them.`

// AIAct is the ai step.
var AIAct = register(aiKind(&Kind{
	Name:    StepAI,
	Order:   425,
	Summary: "Reach a goal said in words: the configured model looks at the page and chooses actions on its elements, round after round, until the goal holds; the actions run as written steps on robust locators, and the next run replays them from the shared cache without a model.",
	Form:    aiActForm,
	Example: "- ai: add the first headphones to the cart and open the cart\n- ai: {prompt: \"open order ${orderId} and cancel it\", maxRounds: 4, maxTokens: 30000}\n",
	Doc: "Each round the model is shown the page's accessibility tree and the elements it may act on by reference, " +
		"and answers with actions (click, fill, select, check, uncheck, press, hover) or with done once the page shows " +
		"the goal holds. Each action is resolved to a locator (role and name first, then text, test id, CSS last) and " +
		"run as the written step of the same kind. The step fails with ASSERTION_FAILED when the goal does not hold " +
		"after maxRounds rounds, and with URL_REFUSED when an action leads off the task's host. Only a plan whose " +
		"goal the model saw hold is cached. See docs/ai-steps.md.",
	Agent: "`ai: add the first headphones to the cart and open the cart` (a model acts at run time, cached after; prefer written steps)",
	Run: func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		a, done, err := startActing(ctx, env, st, "")
		if err != nil {
			return "", nil, err
		}
		if done {
			return "", actOutput(a), nil
		}
		defer a.finish(ctx)
		if err := a.needModel(); err != nil {
			return "", nil, err
		}
		rounds := st.AI.MaxRounds
		if rounds <= 0 {
			rounds = DefaultAIRounds
		}
		goal := env.Secrets().Scrub(a.prompt)
		var (
			done1   []duet.AIAction
			history []string
			reason  string
		)
		el, ok := a.page.(Elements)
		if !ok {
			return "", nil, duet.Errorf(duet.CodeBrowserError, "ai: this browser cannot find elements by locators")
		}
		for round := 1; round <= rounds; round++ {
			page, snap, err := a.actPage(ctx, a.page)
			if err != nil {
				return "", nil, err
			}
			did := "nothing yet"
			if len(history) > 0 {
				did = strings.Join(history, "; ")
			}
			q := fmt.Sprintf("The goal: %s\nDone so far in this step: %s", goal, did)
			ans, err := a.ask(ctx, framed(aiActSystem, page, q, aiMoveFormat), 800)
			if err != nil {
				return "", nil, err
			}
			var mv aiMove
			if err := decodeAnswer(st.Kind, ans, &mv); err != nil {
				return "", nil, err
			}
			if mv.Done == nil {
				return "", nil, duet.Errorf(duet.CodeLLMError, "ai: the model's answer has no done: %s", truncate(oneLineText(ans), 200))
			}
			reason = mv.Reason
			if *mv.Done && len(mv.Actions) == 0 {
				// The goal holds on a look after the last action: only now
				// is the plan worth keeping.
				if err := a.keep(ctx, done1); err != nil {
					return "", nil, err
				}
				out := actOutput(a)
				out["reason"] = mv.Reason
				return "", out, nil
			}
			if len(mv.Actions) == 0 {
				return "", nil, duet.Errorf(duet.CodeLLMError, "ai: the model answered neither done nor actions: %s", truncate(oneLineText(mv.Reason), 200))
			}
			if len(mv.Actions) > aiMaxMoves {
				mv.Actions = mv.Actions[:aiMaxMoves]
			}
			for j, m := range mv.Actions {
				e, ok := snap.element(m.Ref)
				if !ok {
					return "", nil, duet.Errorf(duet.CodeLLMError, "ai: the model named %q, which is not a listed element", truncate(m.Ref, 40))
				}
				if j > 0 {
					// An action before it may have changed the page: the
					// element is looked up again (by its CSS selector) and
					// resolved as it is now; gone, the model looks again.
					fresh, err := a.snapshot(ctx, a.page)
					if err != nil {
						return "", nil, err
					}
					e, ok = fresh.byCSS(e.CSS)
					if !ok {
						break
					}
					snap = fresh
				}
				if _, ok := aiActionKinds[m.Do]; !ok {
					return "", nil, duet.Errorf(duet.CodeLLMError, "ai: %q is not an action an AI step takes (click, fill, select, check, uncheck, press, hover)", truncate(m.Do, 40))
				}
				loc, err := a.resolve(ctx, el, snap, e)
				if err != nil {
					return "", nil, err
				}
				act := duet.AIAction{Do: m.Do, Locator: loc, Region: snap.region(e).FP}
				if m.Do == "fill" || m.Do == "select" || m.Do == "press" {
					act.Value = m.Value
				}
				if len(done1) >= duet.MaxAIPlanActions {
					return "", nil, duet.Errorf(duet.CodeLoopLimit, "ai: more than %d actions without reaching the goal", duet.MaxAIPlanActions)
				}
				if err := a.perform(ctx, a.page, act, act.Value); err != nil {
					return "", nil, err
				}
				done1 = append(done1, act)
				a.usage.Actions = done1
				a.note(a.usage)
				h := act.Do + " " + act.Locator.String()
				if act.Value != "" {
					h += fmt.Sprintf(" with %q", act.Value)
				}
				history = append(history, h)
			}
		}
		return "", nil, duet.Errorf(duet.CodeAssertionFailed, "ai: the goal %q does not hold after %d rounds (%d actions): %s", a.prompt, rounds, len(done1), reason)
	},
}, true, "", func(c *Compiler, n *Node, ai *duet.AIStep) {
	if v := n.Get("maxRounds"); v != nil {
		i, ok := v.Int()
		if !ok || i < 1 || i > 50 {
			c.Errf(v, "maxRounds must be a whole number between 1 and 50")
		}
		ai.MaxRounds = int(i)
	}
}))
