package step

import (
	"context"
	"fmt"
	"strconv"

	"github.com/duet-test/duet"
)

var repeatForm = Form{
	Keys: []Key{
		{Name: "times", Type: Int, Doc: fmt.Sprintf("run the steps this many times (at most %d)", MaxLoopMax)},
		{Name: "while", Type: loopCond, Doc: "run the steps as long as this holds, checked before each iteration"},
		{Name: "until", Type: loopCond, Doc: "run the steps until this holds, checked after each iteration"},
		{Name: "max", Type: Int, Doc: fmt.Sprintf("the most iterations while and until may run (default %d, at most %d): one more fails the step with LOOP_LIMIT", DefaultLoopMax, MaxLoopMax)},
		{Name: "index", Type: Ident, Doc: "a variable that holds the iteration's number, from 1"},
		{Name: "steps", Type: Steps, Required: true, Doc: "the steps of one iteration"},
	},
	ExactlyOne: []string{"times", "while", "until"},
}

// loopCond is the type of a repeat's while and until.
var loopCond = TypeOf("expression or element state", ref("condition"))

// Repeat is the repeat step.
var Repeat = register(loopKind(&Kind{
	Name:    duet.StepRepeat,
	Order:   310,
	Summary: "Run steps a number of times, or while or until a condition holds, never more than a bound: past it the step fails with LOOP_LIMIT.",
	Form:    repeatForm,
	Example: "- repeat:\n" +
		"    times: 3\n" +
		"    index: n\n" +
		"    steps:\n" +
		"      - click: \"#add-to-cart\"\n" +
		"- repeat:\n" +
		"    until: {hidden: \"#next-page\"}\n" +
		"    max: 20\n" +
		"    steps:\n" +
		"      - click: \"#next-page\"\n",
	Doc: "`while` and `until` take an expression, or `{visible: SELECTOR}` / `{hidden: SELECTOR}` (the page as it " +
		"is, not waited for). A loop that still has to go on after `max` iterations fails with `LOOP_LIMIT` " +
		"instead of running on: it never hangs. Each iteration's steps are shown in the report with their " +
		"iteration number.",
	Agent: "`repeat: {times: 3 | while: COND | until: COND, max: 20, index: n, steps: [...]}` — COND is an expression " +
		"or {visible: SELECTOR} / {hidden: SELECTOR}; past max iterations the step fails with LOOP_LIMIT.",
}, "repeat must be a mapping: times, while or until, then steps", compileRepeat, runRepeat, func(l *duet.LoopStep) string {
	if l.Mode == duet.LoopTimes {
		return "repeat " + strconv.Itoa(l.Times) + " times"
	}
	return "repeat " + l.Mode + " " + describeCondition(l.Cond)
}))

// compileRepeat reads the keys of a repeat but its steps.
func compileRepeat(c *Compiler, n *Node, l *duet.LoopStep) {
	var modes []string
	if v := n.Get("times"); v != nil {
		modes = append(modes, "times")
		t, ok := v.Int()
		if !ok || t < 1 || t > MaxLoopMax {
			c.Errf(v, "repeat: times must be a whole number from 1 to %d", MaxLoopMax)
		}
		l.Mode, l.Times, l.Max = duet.LoopTimes, int(t), int(t)
		if n.Get("max") != nil {
			c.Errf(n.Get("max"), "repeat: max bounds while and until; times is its own bound")
		}
	}
	for _, m := range []string{"while", "until"} {
		if v := n.Get(m); v != nil {
			modes = append(modes, m)
			l.Mode, l.Cond = m, c.loopCondition(v, "repeat "+m)
			l.Max = c.loopMax(n, "repeat")
		}
	}
	if len(modes) != 1 {
		c.Errf(n, "repeat needs exactly one of times, while and until; found %d", len(modes))
	}
	l.Index = c.loopVar(n, "index")
}

// runRepeat runs the repeat loop l of st.
func runRepeat(ctx context.Context, env Env, st *duet.Step, l *duet.LoopStep) error {
	for i := 1; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch l.Mode {
		case duet.LoopTimes:
			if i > l.Times {
				return nil
			}
		case duet.LoopWhile:
			ok, err := holds(ctx, env, l.Cond)
			if err != nil || !ok {
				return err
			}
			if i > l.Max {
				return loopLimit(st, "%s still holds after %d iterations (max %d)", describeCondition(l.Cond), l.Max, l.Max)
			}
		case duet.LoopUntil:
			if i > l.Max {
				return loopLimit(st, "%s does not hold after %d iterations (max %d)", describeCondition(l.Cond), l.Max, l.Max)
			}
		default:
			return duet.Errorf(duet.CodeInternal, "repeat: unknown mode %q", l.Mode)
		}
		if err := iterate(ctx, env, l, i, nil); err != nil {
			return err
		}
		if l.Mode == duet.LoopUntil {
			ok, err := holds(ctx, env, l.Cond)
			if err != nil || ok {
				return err
			}
		}
	}
}

// iterate runs the steps of loop l as its i-th iteration (1 the first),
// with its variables set: as to item (forEach's) and index to i.
func iterate(ctx context.Context, env Env, l *duet.LoopStep, i int, item any) error {
	env.FlowState("", i)
	if l.As != "" {
		if err := env.Save(l.As, item); err != nil {
			return err
		}
	}
	if l.Index != "" {
		if err := env.Save(l.Index, i); err != nil {
			return err
		}
	}
	return env.RunSteps(ctx, l.Steps, i)
}
