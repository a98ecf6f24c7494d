package step

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
)

// What the flow kinds (if, repeat, forEach, use) share: the conditions
// they test, the lists of steps they run, and their bounds.

// Bounds of the flow kinds.
const (
	// DefaultLoopMax is a loop's bound on iterations when it names none.
	DefaultLoopMax = 100
	// MaxLoopMax is the largest bound a loop may name.
	MaxLoopMax = 10_000
	// MaxFlowDepth bounds how deep flows call flows.
	MaxFlowDepth = 8
)

// conditionKeys are the keys of a condition in a mapping.
var conditionKeys = []Key{
	{Name: "expr", Type: Expr, Doc: "a boolean expression over the variables"},
	{Name: "visible", Type: Template, Doc: "a CSS selector: true when an element it matches is visible now (the page is not waited for)"},
	{Name: "hidden", Type: Template, Doc: "a CSS selector: true when no element it matches is visible now"},
}

// condition reads a condition from the keys expr, visible and hidden of the
// mapping n (exactly one of them); what names the step in messages.
func (c *Compiler) condition(n *Node, what string) duet.Condition {
	var cond duet.Condition
	var found []string
	for _, k := range conditionKeys {
		v := n.Get(k.Name)
		if v == nil {
			continue
		}
		found = append(found, k.Name)
		s, ok := v.Str()
		if !ok || s == "" {
			c.Errf(v, "%s: %s must be %s", what, k.Name, map[string]string{"expr": "an expression", "visible": "a CSS selector", "hidden": "a CSS selector"}[k.Name])
			continue
		}
		switch k.Name {
		case "expr":
			cond.Expr = s
			if err := eval.Check(s, c.Scope.Vars, true); err != nil {
				c.Errf(v, "%s: %v", what, err)
			}
		case "visible", "hidden":
			if k.Name == "visible" {
				cond.Visible = s
			} else {
				cond.Hidden = s
			}
			c.Template(v, what+" "+k.Name, s)
			if !c.Scope.PageOpen {
				c.Errf(v, "%s: %s needs a page: add an open step before it", what, k.Name)
			}
		}
	}
	if len(found) != 1 {
		c.Errf(n, "%s needs exactly one condition: expr (an expression), visible or hidden (a CSS selector); found %d", what, len(found))
	}
	return cond
}

// loopCondition reads the while or until of a repeat: an expression, or
// {visible: SELECTOR} / {hidden: SELECTOR}.
func (c *Compiler) loopCondition(n *Node, what string) *duet.Condition {
	if s, ok := n.Str(); ok {
		if s == "" {
			c.Errf(n, "%s must be an expression", what)
			return nil
		}
		if err := eval.Check(s, c.Scope.Vars, true); err != nil {
			c.Errf(n, "%s: %v", what, err)
		}
		return &duet.Condition{Expr: s}
	}
	if !c.mapping(n, fmt.Sprintf("%s must be an expression, or {visible: SELECTOR} or {hidden: SELECTOR}", what), "expr", "visible", "hidden") {
		return nil
	}
	cond := c.condition(n, what)
	return &cond
}

// body compiles the list of steps under key of the mapping n, which a flow
// step runs; required says it must be there and not empty.
func (c *Compiler) body(n *Node, key, what string, required bool) []duet.Step {
	v := n.Get(key)
	if v == nil || v.Type == NullNode {
		if required {
			c.Errf(n, "%s needs %s: a list of steps", what, key)
		}
		return nil
	}
	if v.Type != SeqNode || len(v.Items) == 0 {
		c.Errf(v, "%s: %s must be a non-empty list of steps", what, key)
		return nil
	}
	return c.Steps(v)
}

// loopMax reads the max of a loop (DefaultLoopMax when absent).
func (c *Compiler) loopMax(n *Node, what string) int {
	v := n.Get("max")
	if v == nil {
		return DefaultLoopMax
	}
	m, ok := v.Int()
	if !ok || m < 1 || m > MaxLoopMax {
		c.Errf(v, "%s: max must be a whole number from 1 to %d", what, MaxLoopMax)
		return DefaultLoopMax
	}
	return int(m)
}

// loopVar reads the name of a variable a loop saves to (index, as).
func (c *Compiler) loopVar(n *Node, key string) string {
	v := n.Get(key)
	if v == nil {
		return ""
	}
	return c.SaveAs(v)
}

// holds evaluates a condition in the case as it is now.
func holds(ctx context.Context, env Env, cond *duet.Condition) (bool, error) {
	switch {
	case cond == nil:
		return false, duet.Errorf(duet.CodeInternal, "a flow step has no condition")
	case cond.Expr != "":
		ok, err := eval.EvalBool(cond.Expr, env.Vars())
		if err != nil {
			return false, duet.WrapError(duet.CodeBindingFailed, err, "cannot evaluate %s: %v", cond.Expr, err)
		}
		return ok, nil
	}
	sel, err := render(env, cond.Visible+cond.Hidden)
	if err != nil {
		return false, err
	}
	p, err := env.Page(ctx)
	if err != nil {
		return false, err
	}
	vis, err := p.Visible(ctx, sel)
	if err != nil {
		return false, err
	}
	return vis == (cond.Visible != ""), nil
}

// describeCondition is how a condition reads in a step's name and messages.
func describeCondition(cond *duet.Condition) string {
	switch {
	case cond == nil:
		return ""
	case cond.Visible != "":
		return "visible " + cond.Visible
	case cond.Hidden != "":
		return "hidden " + cond.Hidden
	}
	return cond.Expr
}

// loopKind completes k, a loop (repeat, forEach): its body is a mapping of
// its form's keys (msg says what, when it is not one); compile reads the
// loop's own keys into l, then the steps are read; run runs the compiled
// loop and title names it.
func loopKind(k *Kind, msg string, compile func(c *Compiler, n *Node, l *duet.LoopStep),
	run func(ctx context.Context, env Env, st *duet.Step, l *duet.LoopStep) error, title func(l *duet.LoopStep) string) *Kind {
	k.Section = Flow
	k.Compile = func(c *Compiler, st *duet.Step, n *Node) {
		if !c.mapping(n, msg, k.Form.KeyNames()...) {
			return
		}
		l := &duet.LoopStep{}
		st.Loop = l
		compile(c, n, l)
		l.Steps = c.body(n, "steps", string(k.Name), true)
	}
	k.Run = func(ctx context.Context, env Env, st *duet.Step) (string, any, error) {
		if st.Loop == nil {
			return "", nil, noBody(st)
		}
		return "", nil, run(ctx, env, st, st.Loop)
	}
	k.Title = func(st *duet.Step) string {
		if st.Loop == nil {
			return string(st.Kind)
		}
		return title(st.Loop)
	}
	return k
}

// loopLimit is the failure of a loop that would run past its bound.
func loopLimit(st *duet.Step, format string, args ...any) error {
	return duet.Errorf(duet.CodeLoopLimit, "%s: %s; raise max (at most %d) if the loop should run longer", st.Name, fmt.Sprintf(format, args...), MaxLoopMax)
}

// flowNames lists names for messages.
func flowNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(s, ", ")
}
