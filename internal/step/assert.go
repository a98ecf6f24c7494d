package step

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/redact"
)

// Assert is the assert step.
var Assert = register(&Kind{
	Name:      duet.StepAssert,
	Section:   Data,
	Order:     20,
	Assertion: true,
	Summary:   "Fail the case with ASSERTION_FAILED unless an expression over the variables is true.",
	Form: shortFor("expr", Expr, "the expression", "a boolean expression",
		Key{Name: "message", Type: Text, Doc: "said when it does not hold"}),
	Example: "- assert: resp.status == 200 && resp.body.status in [\"paid\", \"shipped\"]\n- assert: {expr: len(resp.body.items) > 0, message: the cart is not empty}\n",
	Doc:     "A failed assertion says what its operands were (`expected resp.status == 200; resp.status is 404`), redacted like saved variables.",
	Agent:   "`assert: resp.status == 200 && resp.body.status == \"paid\"` or `assert: {expr: ..., message: ...}`",
	Compile: func(c *Compiler, st *duet.Step, n *Node) {
		a := &duet.AssertStep{}
		st.Assert = a
		if s, ok := n.Str(); ok {
			a.Expr = s
		} else if n.Type == MapNode {
			c.AllowKeys(n, "expr", "message")
			a.Expr = c.String(n, "expr", true)
			a.Message = c.String(n, "message", false)
		} else {
			c.Errf(n, "assert must be an expression or {expr, message}")
			return
		}
		if a.Expr != "" {
			if err := eval.Check(a.Expr, c.Scope.Vars, true); err != nil {
				c.Errf(n, "assert: %v", err)
			}
		}
	},
	Run: func(_ context.Context, env Env, st *duet.Step) (string, any, error) {
		a := st.Assert
		if a == nil {
			return "", nil, noBody(st)
		}
		ok, err := eval.EvalBool(a.Expr, env.Vars())
		if err != nil {
			return "", nil, duet.WrapError(duet.CodeAssertionFailed, err, "cannot evaluate %s: %v", a.Expr, err)
		}
		if ok {
			return "", nil, nil
		}
		msg := "expected " + a.Expr
		if a.Message != "" {
			msg = a.Message + " (" + a.Expr + ")"
		}
		if got := operands(env.Vars(), a.Expr); got != "" {
			msg += "; " + got
		}
		return "", nil, duet.Errorf(duet.CodeAssertionFailed, "%s", msg)
	},
	Title: func(st *duet.Step) string {
		if st.Assert == nil {
			return string(st.Kind)
		}
		return "assert " + st.Assert.Expr
	},
})

// maxOperandBytes bounds how much of one operand's value a failed
// assertion's message shows.
const maxOperandBytes = 200

// operands says what the parts of a failed assertion were, redacted as the
// run's saved variables are (a part read through a sensitive name is
// masked, sensitive keys inside a value too; the run's secrets are
// scrubbed from the message as from every message): `o.body.status is
// "paid"`. "" when there is nothing to add.
func operands(vars map[string]any, src string) string {
	var parts []string
	for _, o := range eval.Operands(src, vars) {
		var v any = redact.Mask
		if !slices.ContainsFunc(o.Names, redact.IsSensitiveKey) {
			v = redact.Value(o.Value)
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		s := string(b)
		if len(s) > maxOperandBytes {
			s = strings.ToValidUTF8(s[:maxOperandBytes], "") + "…"
		}
		parts = append(parts, o.Expr+" is "+s)
	}
	return strings.Join(parts, ", ")
}
