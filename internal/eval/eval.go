// Package eval evaluates the expressions and ${...} templates of test steps
// over saved variables, with github.com/expr-lang/expr. The compiler uses it
// to validate a case (syntax and variable names) and the engine to run it, so
// what compiles is exactly what runs.
package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/duet-test/duet"
)

// Builtins are the variables every step can use besides saved ones:
// task (id, name, baseUrl), run (id, executor, environment), env (the
// variables of the run's environment) and secrets (the executor's secrets
// the step reads, secrets.NAME).
var Builtins = []string{"task", "run", "env", Secrets}

// IsFunction reports whether name is an expression function (first, len,
// filter, ...): a variable of that name cannot be read, the function
// shadows it.
func IsFunction(name string) bool {
	_, ok := builtin.Index[name]
	return ok || name == fnStep || name == fnValue || name == fnAdd || name == fnRange
}

// maxNodes bounds expression size (a defence against pathological input).
const maxNodes = 2000

// Check compiles src as an expression over the variables known (plus
// Builtins) and returns a caller-friendly error, or nil. Unknown variable
// names are errors.
func Check(src string, known []string, wantBool bool) error {
	_, err := compile(src, known, wantBool, newMeter())
	return err
}

// names collects the variable names an expression reads, minus the ones it
// declares itself with let, and the builtin functions it calls.
type names struct {
	used     []string
	declared map[string]bool
	builtins map[string]bool
}

func (n *names) Visit(node *ast.Node) {
	switch x := (*node).(type) {
	case *ast.IdentifierNode:
		n.used = append(n.used, x.Value)
	case *ast.VariableDeclaratorNode:
		n.declared[x.Name] = true
	case *ast.BuiltinNode:
		n.builtins[x.Name] = true
	}
}

// compile compiles src with the checked builtins and guards of m, which
// account every run of the program to m.
func compile(src string, known []string, wantBool bool, m *meter) (*vm.Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s", firstLine(err.Error()))
	}
	v := &names{declared: map[string]bool{}, builtins: map[string]bool{}}
	ast.Walk(&tree.Node, v)
	for _, name := range v.used {
		if !v.declared[name] && !slices.Contains(known, name) && !slices.Contains(Builtins, name) {
			all := slices.Clone(known)
			for _, b := range Builtins {
				if !slices.Contains(all, b) {
					all = append(all, b)
				}
			}
			return nil, fmt.Errorf("unknown name %s (known: %s)", name, strings.Join(all, ", "))
		}
	}
	opts := append([]expr.Option{expr.AllowUndefinedVariables(), expr.MaxNodes(maxNodes)}, m.options(v.builtins)...)
	if wantBool {
		opts = append(opts, expr.AsBool())
	}
	p, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s", firstLine(err.Error()))
	}
	return p, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Eval evaluates src over vars, within the budget of one evaluation
// (MaxValueBytes and the other limits; errors over it wrap ErrBudget).
func Eval(src string, vars map[string]any) (any, error) {
	return newMeter().eval(src, vars, false)
}

// EvalBool evaluates src over vars and requires a boolean result.
func EvalBool(src string, vars map[string]any) (bool, error) {
	out, err := newMeter().eval(src, vars, true)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("expression gave %T, want a boolean", out)
	}
	return b, nil
}

func (m *meter) eval(src string, vars map[string]any, wantBool bool) (any, error) {
	p, err := compile(src, slices.Sorted(maps.Keys(vars)), wantBool, m)
	if err != nil {
		return nil, err
	}
	out, err := expr.Run(p, vars)
	if err != nil {
		var be *budgetError
		if errors.As(err, &be) {
			return nil, be
		}
		return nil, fmt.Errorf("%s", firstLine(err.Error()))
	}
	return out, nil
}

// A template is a string with ${expression} parts; "$${" stands for a
// literal "${".
type part struct {
	lit  string
	expr string
	isEx bool
}

// ParseTemplate splits s into literal and expression parts.
func parseTemplate(s string) ([]part, error) {
	var parts []part
	var lit strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			lit.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			lit.WriteByte(s[i])
			i++
			continue
		}
		end, err := matchBrace(s, i+2)
		if err != nil {
			return nil, err
		}
		if lit.Len() > 0 {
			parts = append(parts, part{lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, part{expr: strings.TrimSpace(s[i+2 : end]), isEx: true})
		i = end + 1
	}
	if lit.Len() > 0 {
		parts = append(parts, part{lit: lit.String()})
	}
	return parts, nil
}

// LiteralPrefix returns the text template s renders to before its first
// ${...} expression ("$${" read as a literal "${"), and whether s has no
// expression at all (the prefix is then all it renders to). A malformed
// template has no literal part: "" and false.
func LiteralPrefix(s string) (prefix string, whole bool) {
	parts, err := parseTemplate(s)
	if err != nil {
		return "", false
	}
	if len(parts) == 0 {
		return "", true
	}
	if parts[0].isEx {
		return "", false
	}
	return parts[0].lit, len(parts) == 1
}

// matchBrace returns the index of the "}" closing an expression that starts
// at i, skipping nested braces and quoted strings.
func matchBrace(s string, i int) (int, error) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch c := s[j]; c {
		case '"', '\'', '`':
			k := j + 1
			for ; k < len(s) && s[k] != c; k++ {
				if s[k] == '\\' && c != '`' {
					k++
				}
			}
			if k >= len(s) {
				return 0, fmt.Errorf("unterminated string in ${...}")
			}
			j = k
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("unterminated ${...}")
}

// IsTemplate reports whether s has at least one ${...} part.
func IsTemplate(s string) bool {
	parts, err := parseTemplate(s)
	if err != nil {
		return true
	}
	for _, p := range parts {
		if p.isEx {
			return true
		}
	}
	return false
}

// CheckTemplate validates every ${...} part of s against the known variables.
func CheckTemplate(s string, known []string) error {
	parts, err := parseTemplate(s)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.isEx {
			if err := Check(p.expr, known, false); err != nil {
				return fmt.Errorf("in ${%s}: %w", p.expr, err)
			}
		}
	}
	return nil
}

// Render evaluates the template s. A template that is exactly one ${...}
// keeps the value's type (a number stays a number); otherwise the parts are
// joined into a string (maps and lists as JSON). All its parts together are
// one evaluation, with one budget.
func Render(s string, vars map[string]any) (any, error) {
	return newMeter().render(s, vars)
}

func (m *meter) render(s string, vars map[string]any) (any, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].isEx {
		return m.eval(parts[0].expr, vars, false)
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.isEx {
			if err := m.grow("the template", b.Len(), len(p.lit)); err != nil {
				return nil, err
			}
			b.WriteString(p.lit)
			continue
		}
		v, err := m.eval(p.expr, vars, false)
		if err != nil {
			return nil, fmt.Errorf("in ${%s}: %w", p.expr, err)
		}
		if _, isString := v.(string); !isString && shallowSize(v) > 0 {
			// Maps and lists become JSON: measure before marshalling.
			if err := m.fits("${"+p.expr+"}", v, 1); err != nil {
				return nil, err
			}
		}
		text := Stringify(v)
		if err := m.grow("the template", b.Len(), len(text)); err != nil {
			return nil, err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// RenderString is Render with the result turned into a string.
func RenderString(s string, vars map[string]any) (string, error) {
	m := newMeter()
	v, err := m.render(s, vars)
	if err != nil {
		return "", err
	}
	if _, isString := v.(string); !isString {
		if err := m.fits("the template", v, 1); err != nil {
			return "", err
		}
	}
	return Stringify(v), nil
}

// Stringify formats a value for text: strings as they are, nil as "",
// numbers without exponent when whole, maps and lists as JSON.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprint(x)
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}

// RenderValue renders every string leaf of a JSON-like value as a template.
// The whole value is one evaluation, with one budget, and what it renders to
// must fit MaxValueBytes as JSON (it is sent as a request body or tool
// arguments).
func RenderValue(v any, vars map[string]any) (any, error) {
	m := newMeter()
	out, err := m.renderValue(v, vars)
	if err != nil {
		return nil, err
	}
	if err := m.fits("the value", out, 1); err != nil {
		return nil, err
	}
	return out, nil
}

func (m *meter) renderValue(v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		return m.render(x, vars)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := m.renderValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := m.renderValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}

// CheckValue validates every string leaf of a JSON-like value as a template.
func CheckValue(v any, known []string) error {
	switch x := v.(type) {
	case string:
		return CheckTemplate(x, known)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if err := CheckValue(x[k], known); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for i, e := range x {
			if err := CheckValue(e, known); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	}
	return nil
}

// Normalize turns a value into plain JSON types (map[string]any, []any,
// float64, string, bool, nil) so expressions see one shape whatever produced
// it.
func Normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, duet.WrapError(duet.CodeInternal, err, "value is not JSON")
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
