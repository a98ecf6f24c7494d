package eval

import (
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// Operand is a part of an expression whose value explains its outcome:
// "o.body.status" of `o.body.status == "shipped"`.
type Operand struct {
	Expr  string   // the part, as expr-lang prints it
	Value any      // its value over the variables
	Names []string // the variable and member names it reads (for redaction)
}

// comparisons are the operators whose operands explain a false result.
var comparisons = map[string]bool{
	"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"in": true, "not in": true, "contains": true, "startsWith": true, "endsWith": true, "matches": true,
}

// Operands returns the parts of the boolean expression src that explain
// why it is false over vars: the operands of the comparison that failed
// (of the first false term of an &&, of both sides of an ||), or the value
// itself of a bare variable or call. Literal operands are left out: they
// are in the expression already. Parts that cannot be evaluated are left
// out too; nil means nothing to explain. Each part is evaluated within the
// budget of one evaluation.
func Operands(src string, vars map[string]any) []Operand {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	var out []Operand
	var explain func(n ast.Node, depth int)
	explain = func(n ast.Node, depth int) {
		if depth > 8 || len(out) >= 6 {
			return
		}
		switch x := n.(type) {
		case *ast.BinaryNode:
			switch {
			case x.Operator == "&&" || x.Operator == "and":
				if ok, err := EvalBool(x.Left.String(), vars); err == nil && !ok {
					explain(x.Left, depth+1)
				} else {
					explain(x.Right, depth+1)
				}
				return
			case x.Operator == "||" || x.Operator == "or":
				explain(x.Left, depth+1)
				explain(x.Right, depth+1)
				return
			case comparisons[x.Operator]:
				addOperand(&out, x.Left, vars)
				addOperand(&out, x.Right, vars)
				return
			}
		case *ast.UnaryNode:
			if x.Operator == "!" || x.Operator == "not" {
				explain(x.Node, depth+1)
				return
			}
		case *ast.BuiltinNode:
			for _, a := range x.Arguments {
				addOperand(&out, a, vars)
			}
			return
		case *ast.CallNode:
			for _, a := range x.Arguments {
				addOperand(&out, a, vars)
			}
			return
		}
		addOperand(&out, n, vars)
	}
	explain(tree.Node, 0)
	return out
}

// addOperand appends the value of n, unless n is a literal or cannot be
// evaluated.
func addOperand(out *[]Operand, n ast.Node, vars map[string]any) {
	if literal(n) {
		return
	}
	src := n.String()
	v, err := Eval(src, vars)
	if err != nil {
		return
	}
	names := &names{declared: map[string]bool{}, builtins: map[string]bool{}}
	ast.Walk(&n, names)
	op := Operand{Expr: src, Value: v, Names: names.used}
	ast.Walk(&n, memberNames{&op.Names})
	*out = append(*out, op)
}

// memberNames collects the property names of member accesses: "token" of
// login.body.token.
type memberNames struct{ names *[]string }

func (m memberNames) Visit(node *ast.Node) {
	if x, ok := (*node).(*ast.MemberNode); ok {
		if s, ok := x.Property.(*ast.StringNode); ok {
			*m.names = append(*m.names, s.Value)
		}
	}
}

// literal reports whether n is a constant: a literal, or an array or map of
// literals.
func literal(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode, *ast.ConstantNode:
		return true
	case *ast.UnaryNode:
		return (x.Operator == "-" || x.Operator == "+") && literal(x.Node)
	case *ast.ArrayNode:
		for _, e := range x.Nodes {
			if !literal(e) {
				return false
			}
		}
		return true
	case *ast.MapNode:
		for _, p := range x.Pairs {
			if pn, ok := p.(*ast.PairNode); !ok || !literal(pn.Key) || !literal(pn.Value) {
				return false
			}
		}
		return true
	}
	return false
}
